// The logit of one query-key pair (docs/reference-code.md §5.1, §5.3) from the rotation-invariant norms, the
// stationary-frame cross term Re(conj(Q~) K~) and the lag terms. Needs ROBUST and FULL_RESID.
#ifndef RFA_LOGIT_GLSL
#define RFA_LOGIT_GLSL

// logit = tau L; energy = B - log(1 + P R2) (robust) or L (Gaussian), the gate's input.
void rfa_pair_logit(Head p, LagTerms t, float qn, float kn, float cross, out float logit, out float energy) {
  // The twin forms |Q - E K|^2 directly; in float the expanded form can dip below 0 by rounding.
  const float R2 = FULL_RESID ? max(qn + t.E * t.E * kn - 2.0 * t.E * cross, 0.0) : -t.E * cross;
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

#endif
