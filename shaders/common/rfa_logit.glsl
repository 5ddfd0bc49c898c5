// The logit of one query-key pair (docs/reference-code.md §5.1, §5.3) from the rotation-invariant norms, the
// stationary-frame cross term Re(conj(Q~) K~) and the lag terms. Needs ROBUST and FULL_RESID.
#ifndef RFA_LOGIT_GLSL
#define RFA_LOGIT_GLSL

// logit = tau L; energy = B - log(1 + P R2) (robust) or L (Gaussian), the gate's input.
void rfa_pair_logit(Head p, LagTerms t, float qn, float kn, float cross, out float logit, out float energy) {
  // The twin forms |Q - E K|^2 directly; in float the expanded form can dip below 0 by rounding.
  const float R2 = FULL_RESID ? max(qn + t.E2 * kn - 2.0 * t.E * cross, 0.0) : -t.E * cross;
  float L;
  if (ROBUST) {
    const float lg = rfa_log1p(t.P * R2);
    L = t.B - p.kappa * lg;
    energy = t.B - lg;
  } else {
    L = t.B - t.P * R2;
    energy = L;
  }
  logit = p.tau * L;
}

// The same logit in base 2, logit log2(e), for a softmax that runs on exp2 (the fused kernels):
// tau log2(e) and tau kappa folded into the head (load_head), log(1 + P R2) taken as log2.
// energy stays natural (the gate's log-sum-exp).
void rfa_pair_logit2(Head p, LagTerms t, float qn, float kn, float cross, out float logit2, out float energy) {
  const float R2 = FULL_RESID ? max(qn + t.E2 * kn - 2.0 * t.E * cross, 0.0) : -t.E * cross;
  if (ROBUST) {
    const float l2 = rfa_log2_1p(t.P * R2);
    logit2 = p.tau2 * t.B - p.tau_kappa * l2;
    energy = t.B - RFA_LN2 * l2;
  } else {
    const float L = t.B - t.P * R2;
    logit2 = p.tau2 * L;
    energy = L;
  }
}

#endif
