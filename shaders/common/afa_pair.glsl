// The logit of one AFA query-key pair (docs/variant-afa.md §4), shared by the fused kernel
// (afa_attention_body.glsl) and the probe (afa_probe_body.glsl): the probe's weights are the
// kernel's weights only if both form the logit with the same arithmetic, against the row
// statistics m, l the kernel left.
//
// Per pair (i, j), per channel k, from the lag l = t_i - t_j formed from double-float times:
//   e_k = exp(-mu_k |l|)                                   the channel's own decay
//   R2  = |q|^2 + sum_k e_k^2 |K_jk|^2 - 2 e_k Re(conj(q~_k) K~_jk)
//   cov_k = sigma2_k phi_k + eta2_k e_k^2 + gamma2_k,  phi_k = (1 - e_k^2) / (2 mu_k)
//   v^C  = sum_k cov_k | cov_c | 1 / (sum_k w_k / cov_k + b)        (PREC 0 | 1 | 2)
//   logit = alpha^2 * -log(nu v^C + R2 + eps)
// Every e_k comes from the pair's own lag (never e^{-mu t_i} e^{mu t_j}: that product overflows
// float once mu t passes ~88, docs/variant-afa.md §7). The e_k go back to the caller: the fused
// kernel's value sum and the probe's decayed mass need them, and recomputing them would cost D
// more exponentials per pair.
//
// The including shader declares the spec constants D, PREC, PCHAN and UNITARY, the layer table
// `afa` (vec4s, laid out by afa_layer_table.h) and the Q cache `Qc`, includes
// rfa_cache_ring.glsl, enables GL_EXT_control_flow_attributes, and defines afa_key (below). Every loop over a pair's D channels
// is unrolled: lavapipe caps an invocation's loop iterations, and q[] and ek[] stay in registers.
#ifndef AFA_PAIR_GLSL
#define AFA_PAIR_GLSL

#include "afa_channels.glsl"

// The logit of query q (|q|^2 = qn, from afa_load_query) against key `key` at lag |l| = lag, with the
// head's hv = (nu, alpha^2, b, eps); ek receives e_k = exp(-mu_k lag).
float afa_pair_logit(const vec2 q[D], float qn, uint key, float lag, vec4 hv, out float ek[D]) {
  float R2 = qn, vsum = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    vec2 kk = afa_key(key, k);
    if (UNITARY) kk = unit_channel(kk);
    const vec4 c = sch[k];  // mu, sigma2, eta2, gamma2
    const float e = exp(-c.x * lag);
    ek[k] = e;
    R2 += e * (e * dot(kk, kk) - 2.0 * dot(q[k], kk));
    const float cov = c.y * afa_phi(c.x, lag, e) + c.z * e * e + c.w;
    if (PREC == 0) vsum += cov;
    else if (PREC == 1) vsum = k == PCHAN ? cov : vsum;
    else vsum += sw[k] > 0.0 ? sw[k] / cov : 0.0;  // a zero-weight channel adds nothing, even at cov = 0 (the twin skips it)
  }
  const float vC = PREC == 2 ? 1.0 / (vsum + hv.z) : vsum;
  // The expanded residual can round below zero where the key matches the query.
  const float arg = hv.x * vC + max(R2, 0.0) + hv.w;
  // arg = 0 (no noise, eps = 0, an exact match) would be an infinite logit: floored at the
  // smallest normal float, so such keys dominate the row but the sums stay finite.
  return hv.y == 0.0 ? 0.0 : -hv.y * log(max(arg, 1.17549435e-38));
}

// The pair terms as the walks over keys ask for them (common/pair_attention_walk.glsl,
// pair_probe_walk.glsl; RT-RFA's are in rt_pair.glsl):
//   PairRow            what a query row keeps while it walks: the head's (nu, alpha^2, b, eps), |q|^2
//   PAIR_HEAD_SHARED   1: pair_head fills shared memory, and the walk places a barrier after it
//   pair_head          the head's channels into shared memory (threads tid = 0..n-1)
//   pair_row           the row of query cell icell (q gets the query), HD = H * D
//   pair_q_norm2       |q|^2 of the scored query (the tomography's radius)
//   pair_cell_logit    the logit against the key of cache cell jc at lag |l| = lag, and the pair's
//                      decay of the probe's A: the channel mean (1/D) sum_k e_k
//   pair_cross         Re(q^H k) of the scored vectors (k of cache cell jc, projected per channel
//                      under the unitary switch as q is): the tomography's s = pair_cross / |q|
//   pair_counts        whether a key with this logit takes part in the row (every AFA key does)
// The lag is pair_lag (common/rfa_cache_ring.glsl): the decay and the covariance use |l|, the
// rotation is already in the caches' frame.
struct PairRow {
  vec4 hv;  // (nu, alpha^2, b, eps)
  float qn;  // |q|^2
};
#define PAIR_HEAD_SHARED 1

void pair_head(uint h, uint HD, uint tid, uint n) { afa_load_head(h, HD, tid, n); }

PairRow pair_row(uint h, uint HD, uint icell, bool live, out vec2 q[D]) {
  PairRow r;
  r.hv = afa[kAfaBlocks * HD + h];
  r.qn = afa_load_query(icell, live, q);
  return r;
}

float pair_q_norm2(PairRow r) { return r.qn; }

// The readouts' view (AFA_VIEW, afa_layer_table.h; the readout bodies define it as their spec
// constant VIEW): one softmax serves every channel, so the weight is the logit's whatever the view;
// the decay of A is channel c's e_c (a channel), the channel mean (the mean view, RFA's A = Ahat E
// per channel averaged) or 1 (the reweighting map: A = Ahat).
#ifndef AFA_VIEW
#define AFA_VIEW kAfaViewMean
#endif
float pair_cell_logit(const vec2 q[D], PairRow r, uint jc, float lag, out float decay) {
  float ek[D];
  const float logit = afa_pair_logit(q, r.qn, jc, lag, r.hv, ek);
  float mass = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) mass += AFA_VIEW == k ? ek[k] * float(D) : AFA_VIEW >= D ? ek[k] : 0.0;
  decay = AFA_VIEW == kAfaViewReweight ? 1.0 : mass / float(D);
  return logit;
}

float pair_cross(const vec2 q[D], uint jc) { return afa_cross(q, jc); }

bool pair_counts(float logit) { return true; }

#endif
