// Exact attention weights of an RT-RFA layer for a rectangle of one (batch row, head), from the
// caches and the row statistics the fused RT kernel left (ops/rfa_probe.hpp, record_rfa_probe),
// and the row diagnostics of RFA's probe (record_rfa_row_diagnostics), with RT's pair logit
// (common/rt_pair.glsl, the fused kernel's own arithmetic). The body of the kernels rt_probe and
// rt_probe_kv16 (shaders/variants.cmake); the walk (MODE 0: the rectangle, MODE 1: the row
// diagnostics) is common/pair_probe_walk.glsl, shared with AFA.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij
// RFA's A = Ahat E is the weight times the pair's decay, the mass that reaches the output. RT-RFA
// decays neither its weights nor its values (the consensus is sum_j Ahat_ij of unit values
// transported by the lag, docs/variant-rt.md §3.4; mu enters only through the precision, inside
// the logit), so the weight is the mass: A = Ahat (docs/variant-rt.md §10). The directional
// precision P and the whitened distance d2 (probe rows of that section's table) and the curves have
// no RT form on the GPU (the host draws the curves, rfa::head_curves). A key with logit -inf (no
// direction) has weight 0 and adds nothing to the row diagnostics.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(constant_id = kRtReadD) const uint D = 32;           // complex dims per head
layout(constant_id = kRtReadCausal) const bool CAUSAL = true;
layout(constant_id = kRtReadCov) const uint COV = 0;        // rfa::RtCovariance: 0 stationary, 1 ou_rate
layout(constant_id = kRtReadKernel) const uint KERNEL = 0;  // rfa::RtKernel: 0 Student-t, 1 Gaussian
layout(constant_id = kRtReadMode) const uint MODE = 0;      // 0: rectangle of Ahat and A, 1: row diagnostics

// The layer's table (rt_layer_table.h), three vec4 per head. No omega: the
// caches hold Q~, K~ in one frame, where the cosine needs no rotation.
layout(std430, binding = 0) readonly buffer Ab { vec4 rt[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_lm2[]; };  // log(m^2 + eps) [B, H, capacity]
layout(std430, binding = 5) readonly buffer KNb { float k_lm2[]; };  // the same values
layout(std430, binding = 6) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 7) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 8) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols], or [rows, 8] (MODE 1)
layout(std430, binding = 9) writeonly buffer O1 { float a_out[]; };     // [rows, cols] (MODE 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "rt_pair.glsl"

vec2 rt_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_probe_walk.glsl"
