// The logit of one RT-RFA query-key pair (docs/variant-rt.md §3.2, §3.3), shared by the fused
// kernel (rt_attention_body.glsl) and the probe (rt_probe_body.glsl): the probe's weights are the
// kernel's weights only if both form the logit with the same arithmetic, against the row
// statistics m, l the kernel left.
//
// Per pair (i, j), from the lag l = |t_i - t_j| formed from double-float times:
//   c      = Re(Q~_i^H K~_j),  R2 = |qh|^2 + |kh|^2 - 2c            (2 - 2c for unit vectors)
//   S(l)   = s2t (1 - E^2) + eta2 E^2 + gamma2  |  sigma2 phi + eta2 E^2 + gamma2,  E = e^{-mu l}
//   log P  = -logaddexp(log(a_i + tau_th2), log S(l) - log(m_j^2 + eps) + 2 mu l),  a_i = S(0) / (m_i^2 + eps)
//   L      = log P - kappa log(1 + P R2 / nu)  |  log P - P R2;   logit = beta_s L
// The precision stays in the log domain: the literal S e^{2 mu l} overflows float at mu l ~ 44,
// the log form is finite at every lag (docs/variant-rt.md §3.2, §5). No decay touches the weight:
// E enters only through S(l) and the key's variance.
//
// The head's table is three vec4 (laid out by rt_layer_table.h): ha = (mu, s2t, sigma2,
// eta2), hb = (gamma2, tau_th2, nu, kappa), hc = (beta_s, S(0), 0, 0).
//
// The including shader declares the spec constants D, COV and KERNEL, the layer table `rt`, the Q
// cache `Qc` and the log-magnitudes `q_lm2`, `k_lm2`, includes rfa_cache_ring.glsl, enables
// GL_EXT_control_flow_attributes, and defines rt_key (below). Every loop over a pair's D components
// is unrolled: lavapipe caps an invocation's loop iterations, and q[] stays in registers.
#ifndef RT_PAIR_GLSL
#define RT_PAIR_GLSL

#include "rt_layer_table.h"

#ifndef NEG_INF
#define NEG_INF uintBitsToFloat(0xff800000u)
#endif

// Component k of the key `key` (what `key` indexes is the includer's business: a cache cell, a
// row of a shared-memory tile).
vec2 rt_key(uint key, uint k);

// 1 - e^{-x} for x >= 0, accurate where it cancels (a series below 0.1: relative error < 2e-8).
float one_minus_exp(float x) {
  if (x < 0.1) return x * (1.0 - x * (0.5 - x * (1.0 / 6.0 - x * (1.0 / 24.0 - x * (1.0 / 120.0)))));
  return 1.0 - exp(-x);
}

// The tangential covariance S(l) of the head (mu_t = mu).
float rt_cov(vec4 a, vec4 b, float l) {
  const float x = 2.0 * a.x * l, e2 = exp(-x);
  const float proc = COV == 0 ? a.y * one_minus_exp(x)
                              : a.z * (a.x > 0.0 ? one_minus_exp(x) / (2.0 * a.x) : l);
  return proc + a.w * e2 + b.x;
}

// The query direction of cache cell icell (zeros for a row that is not live); returns |qh|^2: 1,
// or 0 for a zero query.
float rt_load_query(uint icell, bool live, out vec2 q[D]) {
  float qq = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    q[k] = live ? Qc[icell * D + k] : vec2(0.0);
    qq += dot(q[k], q[k]);
  }
  return qq;
}

// log(a_i + tau_th2) of a query with log(m_i^2 + eps) = lm_i: its angular variance a_i = S(0) /
// (m_i^2 + eps) (0 without noise) plus the floor.
float rt_query_log_var(vec4 hb, vec4 hc, float lm_i) {
  const float a_i = hc.y > 0.0 ? hc.y * exp(-lm_i) : 0.0;
  return log(a_i + hb.y);
}

// The logit of query q (|q|^2 = qq, log(a_i + tau_th2) = log_q) against key `key` with
// log(m_j^2 + eps) = lm_j at lag |l| = lag. -inf where log P = -inf: a zero-magnitude key (eps = 0)
// carries no direction, its weight is 0 (the caller skips it; exp(-inf - m) would be NaN on a
// row's first key).
float rt_pair_logit(const vec2 q[D], float qq, float log_q, uint key, float lm_j, float lag, vec4 ha, vec4 hb,
                    vec4 hc) {
  // R2 = |qh - rotated kh|^2 = |qh|^2 + |kh|^2 - 2c: 2 - 2c for unit vectors, and right for a zero
  // query or key too (the twin's literal distance).
  float c = 0.0, kk = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    const vec2 kv = rt_key(key, k);
    c += dot(q[k], kv);
    kk += dot(kv, kv);
  }
  const float R2 = max(qq + kk - 2.0 * c, 0.0);
  const float Sl = rt_cov(ha, hb, lag);
  // log of the key's angular variance; -inf without noise (then log P = -log(a_i + tau_th2)).
  const float log_k = Sl > 0.0 ? log(Sl) - lm_j + 2.0 * ha.x * lag : NEG_INF;
  const float hi = max(log_q, log_k);
  const float log_p = -(hi + log(1.0 + exp(-abs(log_q - log_k))));
  if (!(log_p > NEG_INF)) return NEG_INF;
  const float d2 = exp(log_p) * R2;
  const float L = KERNEL == 0 ? log_p - hb.w * log(1.0 + d2 / hb.z) : log_p - d2;
  return hc.x * L;
}

// The pair terms as the walks over keys ask for them (common/pair_attention_walk.glsl,
// pair_probe_walk.glsl; the interface is AFA's, common/afa_pair.glsl): the row keeps the head's
// three vec4, |qh|^2 and log(a_i + tau_th2); no shared memory per head; a pair's logit is -inf for
// a key without direction, which takes no part in the row (pair_counts), and its decay is 1 (RT-RFA
// decays neither weights nor values: A = Ahat); pair_cross is the plain Re(qh^H kh), the cosine.
struct PairRow {
  vec4 ha, hb, hc;
  float qq;     // |qh|^2
  float log_q;  // log(a_i + tau_th2)
};
#define PAIR_HEAD_SHARED 0

void pair_head(uint h, uint HD, uint tid, uint n) {}

PairRow pair_row(uint h, uint HD, uint icell, bool live, out vec2 q[D]) {
  PairRow r;
  const uint row = h * (kRtHeadStride / 4);  // three vec4 per head: rt_layer_table.h
  r.ha = rt[row];
  r.hb = rt[row + 1];
  r.hc = rt[row + 2];
  r.qq = rt_load_query(icell, live, q);  // |qh|^2: 1, or 0 for a zero query
  // The query's angular variance a_i = S(0) / (m_i^2 + eps) plus the floor.
  r.log_q = rt_query_log_var(r.hb, r.hc, live ? q_lm2[icell] : 0.0);
  return r;
}

float pair_q_norm2(PairRow r) { return r.qq; }

float pair_cell_logit(const vec2 q[D], PairRow r, uint jc, float lag, out float decay) {
  decay = 1.0;
  return rt_pair_logit(q, r.qq, r.log_q, jc, k_lm2[jc], lag, r.ha, r.hb, r.hc);
}

float pair_cross(const vec2 q[D], uint jc) {
  float c = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) c += dot(q[k], rt_key(jc, k));
  return c;
}

bool pair_counts(float logit) { return logit != NEG_INF; }

#endif
