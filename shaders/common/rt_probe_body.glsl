// Exact attention weights of an RT-RFA layer for a rectangle of one (batch row, head), from the
// caches and the row statistics the fused RT kernel left (ops/rfa_probe.hpp, record_rfa_probe):
// the rectangle of common/rfa_probe_body.glsl, MODE 0, with RT's pair logit (common/rt_pair.glsl,
// the fused kernel's own arithmetic). Included by rt_probe.comp and rt_probe_kv16.comp.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij
// RFA's A = Ahat E is the weight times the pair's decay, the mass that reaches the output. RT-RFA
// decays neither its weights nor its values (the consensus is sum_j Ahat_ij of unit values
// transported by the lag, docs/variant-rt.md §3.4; mu enters only through the precision, inside
// the logit), so the weight is the mass: A = Ahat (docs/variant-rt.md §10). The directional
// precision P and the whitened distance d2 (probe rows of that section's table), row diagnostics,
// curves and tomography have no RT form on the GPU (record_rfa_probe's siblings refuse RT layers).
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i. Masked cells are 0 in both outputs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;  // complex dims per head
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint COV = 0;     // rfa::RtCovariance: 0 stationary, 1 ou_rate
layout(constant_id = 3) const uint KERNEL = 0;  // rfa::RtKernel: 0 Student-t, 1 Gaussian

// The layer's table (ops/rt_attention.cpp's rt_layer_table), three vec4 per head. No omega: the
// caches hold Q~, K~ in one frame, where the cosine needs no rotation.
layout(std430, binding = 0) readonly buffer Ab { vec4 rt[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_lm2[]; };  // log(m^2 + eps) [B, H, capacity]
layout(std430, binding = 5) readonly buffer KNb { float k_lm2[]; };  // the same values
layout(std430, binding = 6) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 7) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 8) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols]
layout(std430, binding = 9) writeonly buffer O1 { float a_out[]; };     // [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "rt_pair.glsl"

vec2 rt_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  if (gid >= rows * cols) return;
  const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
  const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
  float ahat = 0.0;
  if (!masked) {
    const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
    const uint ic = base + slot_of(i), jc = base + slot_of(j);
    const vec4 ha = rt[3 * pc.h], hb = rt[3 * pc.h + 1], hc = rt[3 * pc.h + 2];
    vec2 q[D];
    const float qq = rt_load_query(ic, true, q);
    const float log_q = rt_query_log_var(hb, hc, q_lm2[ic]);
    const float logit =
        rt_pair_logit(q, qq, log_q, jc, k_lm2[jc], rt_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]), ha, hb, hc);
    // A key the kernel skipped (logit -inf) has weight 0; so has every key of a row without any.
    const float l = row_sum[ic];
    ahat = l > 0.0 && logit != NEG_INF ? exp(logit - row_max[ic]) / l : 0.0;
  }
  ahat_out[gid] = ahat;
  a_out[gid] = ahat;  // A = Ahat: no decay on RT weights or values (above)
}
