// Exact attention weights of an AFA layer for a rectangle of one (batch row, head), from the caches
// and the row statistics the fused AFA kernel left (ops/rfa_probe.hpp, record_rfa_probe), and the
// row diagnostics of RFA's probe (record_rfa_row_diagnostics), with AFA's pair logit
// (common/afa_pair.glsl, the fused kernel's own arithmetic). Included by afa_probe.comp and
// afa_probe_kv16.comp.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij (1/D) sum_k e^{-mu_k |l_ij|}           the mean decayed mass
// RFA's A = Ahat E is the weight times the pair's one decay. An AFA pair has D decays, one per
// channel (the value side shrinks channel k by e_k, docs/variant-afa.md §4), so no single matrix
// is "the decayed weight"; A is the channel mean of the per-channel weights Ahat e_k (its row sums
// are the per-channel decayed mass of docs/variant-afa.md §11 averaged over channels): it equals
// Ahat where every mu_k = 0 (the unitary switch) and Ahat e^{-mu |l|}, RFA's form, where one mu
// serves every channel.
// MODE 0: the rectangle, one thread per cell: Ahat and A [rows, cols], masked cells 0 in both.
// MODE 1: one thread per row of [r0, r1), over every key of the row, RFA's row diagnostics from
//   these weights (docs/math.md §7): entropy -sum_j Ahat log Ahat, log-partition m + log l, max
//   Ahat, expected lag sum_j A_ij |l_ij|, mass of A beyond the 4 lag thresholds: [rows, 8].
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;  // complex channels per head
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint PREC = 0;  // rfa::AfaPrecision
layout(constant_id = 3) const bool UNITARY = false;
layout(constant_id = 4) const uint PCHAN = 0;  // the channel of PREC 1
layout(constant_id = 5) const uint MODE = 0;   // 0: rectangle of Ahat and A, 1: row diagnostics

// The layer's table (ops/afa_attention.cpp's afa_layer_table): [H*D] (mu, sigma2, eta2, gamma2),
// [H*D] (mix gate, w, e^{lambda h}), [H] (nu, alpha^2, b, eps). No omega: the caches hold Q~, K~
// in one frame, where the residual needs no rotation.
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 5) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 6) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols], or [rows, 8] (MODE 1)
layout(std430, binding = 7) writeonly buffer O1 { float a_out[]; };     // [rows, cols] (MODE 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_pair.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

// The weight Ahat, the mean decayed weight A, the lag |l| and the logit of pair (i, j) of a live row
// whose query is q (|q|^2 = qn), against the row statistics m, l.
vec4 afa_weight(const vec2 q[D], float qn, uint base, uint tbase, uint i, uint j, vec4 hv, float m, float l) {
  float ek[D];
  const float lag = afa_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]);
  const float logit = afa_pair_logit(q, qn, base + slot_of(j), lag, hv, ek);
  const float ahat = l > 0.0 ? exp(logit - m) / l : 0.0;
  float mass = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) mass += ek[k];
  return vec4(ahat, ahat * (mass / float(D)), lag, logit);
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  // Every invocation of the dispatch probes head pc.h: its channels once per workgroup.
  afa_load_head(pc.h, pc.heads * D, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
  barrier();
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
  const vec4 hv = afa[2 * pc.heads * D + pc.h];  // (nu, alpha^2, b, eps)
  if (MODE == 0) {
    if (gid >= rows * cols) return;
    const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    vec4 w = vec4(0.0);
    if (!masked) {
      const uint ic = base + slot_of(i);
      vec2 q[D];
      const float qn = afa_load_query(ic, true, q);
      w = afa_weight(q, qn, base, tbase, i, j, hv, row_max[ic], row_sum[ic]);
    }
    ahat_out[gid] = w.x;
    a_out[gid] = w.y;
  } else {
    if (gid >= rows) return;
    const uint i = pc.r0 + gid;
    const uint ic = base + slot_of(i);
    const float m = row_max[ic], l = row_sum[ic];
    const float log_l = log(l);
    vec2 q[D];
    const float qn = afa_load_query(ic, true, q);
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    float ent = 0.0, mx = 0.0, el = 0.0;
    vec4 beyond = vec4(0.0);
    const vec4 thr = vec4(pc.thr[0], pc.thr[1], pc.thr[2], pc.thr[3]);
    for (uint j = kbeg; j < kend; ++j) {
      const vec4 w = afa_weight(q, qn, base, tbase, i, j, hv, m, l);
      if (w.x > 0.0) ent -= w.x * (w.w - m - log_l);  // log Ahat, without the rounding of exp and log
      mx = max(mx, w.x);
      el += w.y * w.z;
      beyond += mix(vec4(0.0), vec4(w.y), greaterThan(vec4(w.z), thr));
    }
    const bool any = kend > 0 && l > 0.0;
    ahat_out[gid * 8 + 0] = ent;
    ahat_out[gid * 8 + 1] = any ? m + log_l : uintBitsToFloat(0xff800000u);
    ahat_out[gid * 8 + 2] = mx;
    ahat_out[gid * 8 + 3] = el;
    for (uint k = 0; k < 4; ++k) ahat_out[gid * 8 + 4 + k] = beyond[k];
  }
}
