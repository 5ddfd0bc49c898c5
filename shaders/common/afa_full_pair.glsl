// The pair terms of full (anisotropic) AFA (docs/variant-afa-full.md §2), shared by its fused kernel
// (afa_full_attention_body.glsl) and its readouts (afa_full_probe_body.glsl,
// afa_full_tomography_body.glsl), so the readouts reproduce the kernel's weights with its arithmetic.
//
// Per pair (i, j), per channel k, from the lag l = t_i - t_j formed from double-float times:
//   e_k = exp(-mu_k |l|),  cov_k = sigma2_k phi_k + eta2_k e_k^2 + gamma2_k,  P_k = 1 / (cov_k + eps)
//   r_k = e_k K~_jk - q~_k    (the key carried to the query's time, in the caches' frame: |r_k| is the
//                              twin's |e^{lambda_k l} K_jk - Q_ik|, formed directly, not expanded)
//   D2 = sum_k P_k |r_k|^2,  W = (1 + D2 / nu)^(-alpha^2)
// and the kernel accumulates per channel den_k += W P_k, num_k += W P_k e_k V~_jk. W <= 1 and
// P_k <= 1 / (eta2 + gamma2 + eps)-ish bounds (docs/variant-afa-full.md §4): no running maximum.
//
// The including shader declares the spec constants D and UNITARY, the layer table `afa`, the Q cache
// `Qc`, includes rfa_cache_ring.glsl, enables GL_EXT_control_flow_attributes and defines afa_key.
// Readouts define AFA_FULL_READOUT (the pair interface below), declare `den_in` (the kernel's
// normalisers [cells * D]) and define AFA_VIEW (the spec constant VIEW).
#ifndef AFA_FULL_PAIR_GLSL
#define AFA_FULL_PAIR_GLSL

#include "afa_channels.glsl"

// W of query q against key `key` at lag |l| = lag, the head's hv = (nu, alpha^2, b, eps); ek and pk
// receive e_k and P_k.
float afa_full_pair(const vec2 q[D], uint key, float lag, vec4 hv, out float ek[D], out float pk[D]) {
  float D2 = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    vec2 kk = afa_key(key, k);
    if (UNITARY) kk = unit_channel(kk);
    const vec4 c = sch[k];  // mu, sigma2, eta2, gamma2
    const float e = exp(-c.x * lag);
    ek[k] = e;
    // cov + eps > 0 at every lag (the op's check); the floor only keeps a float underflow of
    // eta2 e^2 far out from dividing by zero.
    const float P = 1.0 / max(c.y * afa_phi(c.x, lag, e) + c.z * e * e + c.w + hv.w, 1.17549435e-38);
    pk[k] = P;
    const vec2 r = e * kk - q[k];
    D2 += P * dot(r, r);
  }
  // (1 + D2 / nu)^(-alpha^2); D2 = inf gives 0, alpha = 0 gives 1.
  return hv.y == 0.0 ? 1.0 : exp(-hv.y * log(1.0 + D2 / hv.x));
}

// The pair interface of the walks over keys (common/pair_probe_walk.glsl, pair_tomography_walk.glsl;
// see common/afa_pair.glsl). A readout's weight of pair (i, j) in view AFA_VIEW:
//   channel c      Q_c,ij = W P_c / den_c,          A = Q_c e_c
//   mean           (1/D) sum_k Q_k,ij,              A = (1/D) sum_k Q_k e_k
//   reweighting    W_ij,                            A = W_ij
// returned as a logit log(weight) + lnorm, lnorm = (1/D) sum_k log den_k = m_i + log l_i of the row
// statistics the kernel wrote (m = 0, l = exp((1/D) sum_k log den_k)), so the probe walk's
// exp(logit - m) / l is the weight and every readout's log-partition the channel mean of log den_k
// (at D = 1 the full form's logit log(W P) is the memory-optimised one's at nu = alpha = 1, eps = 0).
#ifdef AFA_FULL_READOUT
struct PairRow {
  vec4 hv;           // (nu, alpha^2, b, eps)
  float qn;          // |q|^2
  float lnorm;       // (1/D) sum_k log den_k: m_i + log l_i of the kernel's row statistics
  uint icell;        // the query's cache cell: its den_k are den_in[icell * D + k] (a struct with a
                     // spec-constant-sized array could not be initialised)
};
#define PAIR_HEAD_SHARED 1

void pair_head(uint h, uint HD, uint tid, uint n) { afa_load_head(h, HD, tid, n); }

PairRow pair_row(uint h, uint HD, uint icell, bool live, out vec2 q[D]) {
  PairRow r;
  r.hv = afa[kAfaBlocks * HD + h];
  r.qn = afa_load_query(icell, live, q);
  r.icell = icell;
  float lnorm = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) lnorm += live ? log(den_in[icell * D + k]) : 0.0;
  r.lnorm = lnorm / float(D);
  return r;
}

float pair_q_norm2(PairRow r) { return r.qn; }

float pair_cell_logit(const vec2 q[D], PairRow r, uint jc, float lag, out float decay) {
  float ek[D], pk[D];
  const float W = afa_full_pair(q, jc, lag, r.hv, ek, pk);
  float w = 0.0, we = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    const float d = den_in[r.icell * D + k];
    const float qk = d > 0.0 ? W * pk[k] / d : 0.0;
    w += AFA_VIEW == k || AFA_VIEW == kAfaViewMean ? qk : 0.0;
    we += AFA_VIEW == k || AFA_VIEW == kAfaViewMean ? qk * ek[k] : 0.0;
  }
  if (AFA_VIEW == kAfaViewReweight) {
    w = W;
    we = W;
  } else if (AFA_VIEW == kAfaViewMean) {
    w /= float(D);
    we /= float(D);
  }
  decay = w > 0.0 ? we / w : 0.0;
  return w > 0.0 ? log(w) + r.lnorm : uintBitsToFloat(0xff800000u);
}

float pair_cross(const vec2 q[D], uint jc) { return afa_cross(q, jc); }

bool pair_counts(float logit) { return true; }

#endif  // AFA_FULL_READOUT

#endif
