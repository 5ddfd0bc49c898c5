// Exact attention weights of an RT-RFA layer for a rectangle of one (batch row, head), from the
// caches and the row statistics the fused RT kernel left (ops/rfa_probe.hpp, record_rfa_probe),
// and the row diagnostics of RFA's probe (record_rfa_row_diagnostics), with RT's pair logit
// (common/rt_pair.glsl, the fused kernel's own arithmetic). Included by rt_probe.comp and
// rt_probe_kv16.comp.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij
// RFA's A = Ahat E is the weight times the pair's decay, the mass that reaches the output. RT-RFA
// decays neither its weights nor its values (the consensus is sum_j Ahat_ij of unit values
// transported by the lag, docs/variant-rt.md §3.4; mu enters only through the precision, inside
// the logit), so the weight is the mass: A = Ahat (docs/variant-rt.md §10). The directional
// precision P and the whitened distance d2 (probe rows of that section's table) and the curves have
// no RT form on the GPU (the host draws the curves, rfa::head_curves).
// MODE 0: the rectangle, one thread per cell: Ahat and A [rows, cols], masked cells 0 in both.
// MODE 1: one thread per row of [r0, r1), over every key of the row, RFA's row diagnostics from
//   these weights (docs/math.md §7): entropy -sum_j Ahat log Ahat, log-partition m + log l, max
//   Ahat, expected lag sum_j A_ij |l_ij|, mass of A beyond the 4 lag thresholds: [rows, 8]. A key
//   with logit -inf (no direction) has weight 0 and adds nothing.
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
layout(constant_id = 4) const uint MODE = 0;    // 0: rectangle of Ahat and A, 1: row diagnostics

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
layout(std430, binding = 8) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols], or [rows, 8] (MODE 1)
layout(std430, binding = 9) writeonly buffer O1 { float a_out[]; };     // [rows, cols] (MODE 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "rt_pair.glsl"

vec2 rt_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

// The logit of pair (i, j) of a live row whose query is q (|q|^2 = qq, log(a_i + tau_th2) = log_q);
// -inf for a key without direction.
float rt_logit(const vec2 q[D], float qq, float log_q, uint base, uint tbase, uint i, uint j, vec4 ha, vec4 hb,
               vec4 hc) {
  const uint jc = base + slot_of(j);
  return rt_pair_logit(q, qq, log_q, jc, k_lm2[jc], rt_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]), ha, hb, hc);
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
  const vec4 ha = rt[3 * pc.h], hb = rt[3 * pc.h + 1], hc = rt[3 * pc.h + 2];
  if (MODE == 0) {
    if (gid >= rows * cols) return;
    const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    float ahat = 0.0;
    if (!masked) {
      const uint ic = base + slot_of(i);
      vec2 q[D];
      const float qq = rt_load_query(ic, true, q);
      const float log_q = rt_query_log_var(hb, hc, q_lm2[ic]);
      const float logit = rt_logit(q, qq, log_q, base, tbase, i, j, ha, hb, hc);
      // A key the kernel skipped (logit -inf) has weight 0; so has every key of a row without any.
      const float l = row_sum[ic];
      ahat = l > 0.0 && logit != NEG_INF ? exp(logit - row_max[ic]) / l : 0.0;
    }
    ahat_out[gid] = ahat;
    a_out[gid] = ahat;  // A = Ahat: no decay on RT weights or values (above)
  } else {
    if (gid >= rows) return;
    const uint i = pc.r0 + gid;
    const uint ic = base + slot_of(i);
    const float m = row_max[ic], l = row_sum[ic];
    const float log_l = log(l);
    vec2 q[D];
    const float qq = rt_load_query(ic, true, q);
    const float log_q = rt_query_log_var(hb, hc, q_lm2[ic]);
    const vec2 ti = ts[tbase + slot_of(i)];
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    float ent = 0.0, mx = 0.0, el = 0.0;
    vec4 beyond = vec4(0.0);
    const vec4 thr = vec4(pc.thr[0], pc.thr[1], pc.thr[2], pc.thr[3]);
    const bool any = kend > 0 && l > 0.0;
    for (uint j = kbeg; any && j < kend; ++j) {
      const float logit = rt_logit(q, qq, log_q, base, tbase, i, j, ha, hb, hc);
      if (logit == NEG_INF) continue;
      const float ahat = exp(logit - m) / l, lag = rt_lag(ti, ts[tbase + slot_of(j)]);
      if (ahat > 0.0) ent -= ahat * (logit - m - log_l);  // log Ahat, without the rounding of exp and log
      mx = max(mx, ahat);
      el += ahat * lag;  // A = Ahat
      beyond += mix(vec4(0.0), vec4(ahat), greaterThan(vec4(lag), thr));
    }
    ahat_out[gid * 8 + 0] = ent;
    ahat_out[gid * 8 + 1] = any ? m + log_l : NEG_INF;
    ahat_out[gid * 8 + 2] = mx;
    ahat_out[gid * 8 + 3] = el;
    for (uint k = 0; k < 4; ++k) ahat_out[gid * 8 + 4 + k] = beyond[k];
  }
}
