// Attention tomography of one (batch row, head) of an AFA layer (docs/DIAGNOSTICS.md §2, §3): the
// per-pair work of the diagnostics recomputed from the caches like afa_probe, with AFA's own pair
// logit (common/afa_pair.glsl, the fused kernel's arithmetic) scaled by a temperature alpha.
// The body of the kernels afa_tomography and afa_tomography_kv16 (shaders/variants.cmake).
// The walk (both modes) is common/pair_tomography_walk.glsl, shared with RT-RFA.
//
// q and k are the vectors the kernel scores with: Q~_i and K~_j of the caches (the stationary
// frame), each channel projected to unit modulus under the unitary switch. s_ij = u_i . k_j =
// Re(q_i^H k_j) / |q_i|, the plain projection as for every head; the logit itself sees the key
// through the channel-decayed projection sum_k e_k Re(conj(q_ik) k_jk) (docs/DIAGNOSTICS.md §2).
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
//   every key the row attends to: the row statistics of common/tomography_state.glsl.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i
//   (times the channel-mean decay (1/D) sum_k e^{-mu_k |l_ij|} when decayed: the probe's A), 0
//   where masked, from the MODE 0 rows of the same alpha.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
#include "afa_layer_table.h"
layout(constant_id = kAfaReadD) const uint D = 32;         // complex channels per head
layout(constant_id = kAfaReadCausal) const bool CAUSAL = true;
layout(constant_id = kAfaReadPrec) const uint PREC = 0;    // rfa::AfaPrecision
layout(constant_id = kAfaReadUnitary) const bool UNITARY = false;
layout(constant_id = kAfaReadPchan) const uint PCHAN = 0;  // the channel of PREC 1
layout(constant_id = kAfaReadMode) const uint MODE = 0;    // 0: row statistics, 1: the matrix P(alpha)
layout(constant_id = kAfaReadView) const uint VIEW = kAfaViewMean;  // afa_layer_table.h: a channel, the mean or W
#define AFA_VIEW VIEW

// The layer's table as afa_probe_body.glsl reads it (afa_layer_table.h).
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 5) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_pair.glsl"
#include "tomography_state.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_tomography_walk.glsl"
