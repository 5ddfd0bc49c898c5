// Attention tomography of one (batch row, head) of an RT-RFA layer (docs/DIAGNOSTICS.md §2, §3):
// the per-pair work of the diagnostics recomputed from the caches like rt_probe, with RT's own
// pair logit (common/rt_pair.glsl, the fused kernel's arithmetic) scaled by a temperature alpha.
// The body of the kernels rt_tomography and rt_tomography_kv16 (shaders/variants.cmake).
// The walk (both modes) is common/pair_tomography_walk.glsl, shared with AFA.
//
// q and k are the vectors the kernel scores with: the unit directions qh~_i, kh~_j of the caches
// (the stationary frame), so |q_i| = 1 (0 for a zero query) and s_ij = u_i . k_j = c_ij, the
// cosine of the pair; the logit is beta_s (log P_ij - kappa log(1 + P_ij (2 - 2 c_ij) / nu)) (or
// the Gaussian kernel's), P_ij from the magnitudes and the lag. A key whose logit is -inf (no
// directional information: zero magnitude with eps = 0) has weight 0 and is left out of every
// statistic, as the fused kernel leaves it out of the softmax.
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
//   every key the row attends to: the row statistics of common/tomography_state.glsl.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i,
//   0 where masked; `decayed` changes nothing (RT-RFA decays neither weights nor values: the
//   probe's A is Ahat, docs/variant-rt.md §10).
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(constant_id = kRtReadD) const uint D = 32;           // complex dims per head
layout(constant_id = kRtReadCausal) const bool CAUSAL = true;
layout(constant_id = kRtReadCov) const uint COV = 0;        // rfa::RtCovariance: 0 stationary, 1 ou_rate
layout(constant_id = kRtReadKernel) const uint KERNEL = 0;  // rfa::RtKernel: 0 Student-t, 1 Gaussian
layout(constant_id = kRtReadMode) const uint MODE = 0;      // 0: row statistics, 1: the matrix P(alpha)

// The layer's table as rt_probe_body.glsl reads it (rt_layer_table.h).
layout(std430, binding = 0) readonly buffer Ab { vec4 rt[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_lm2[]; };  // log(m^2 + eps) [B, H, capacity]
layout(std430, binding = 5) readonly buffer KNb { float k_lm2[]; };  // the same values
layout(std430, binding = 6) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 7) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"
#include "rt_pair.glsl"
#include "tomography_state.glsl"

vec2 rt_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_tomography_walk.glsl"
