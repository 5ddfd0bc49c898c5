// The online row state of the attention tomography (docs/DIAGNOSTICS.md §3, §4), shared by the
// RFA, AFA and RT-RFA tomography shaders (rfa_tomography_body.glsl, afa_tomography_body.glsl,
// rt_tomography_body.glsl): each supplies its own pair logit, projected coordinate s and lag; the
// statistics of a row are the same for every mechanism.
//
// MODE 0 runs one workgroup of 64 threads per query row: each thread makes one online pass with a
// running maximum over every 64th key of the row (tomo_add), then the 64 partial states merge in
// shared memory (tomo_finish; the merge rules are those of the online pass, for two blocks at
// once), so a short window still spreads over many workgroups:
//   x_ij = alpha logit_ij,  p_ij = exp(x_ij - m_i) / l_i
//   entropy H_i = log l_i - T_i / l_i with T_i = sum_j e^{x_ij - m_i} (x_ij - m_i) <= 0: kept
//     relative to the running max (and rescaled with it), so a sharp row (large logits, tiny H)
//     loses nothing to cancellation, unlike log Z - E_p[x];
//   log Z_i = m_i + log l_i;  max weight = 1 / l_i (m_i is the row maximum);
//   E_p[s], Var_p[s] of the projected coordinate s_ij, and E_p[logit], Var_p[logit], by the
//     weighted West recurrence: rescaling every earlier weight by e^{m_old - m_new} scales the sum
//     of weights and M2 and leaves the mean alone;
//   the uniform (unweighted) mean and variance of the unscaled logits (Welford);
//   tau_i = |q_i| / sqrt(2 D) (real dimension d = 2D) and the expected lag under p.
//   out [rows, 16]: m, l, H, log Z, p_max, E[s], Var[s], E[logit], Var[logit], tau, keys,
//   mean logit, var logit (uniform), expected lag, |q|, 0 (ops/rfa_tomography.hpp names them).
//
// The including shader declares D, the push block `pc` (TomographyPush) and `rows_out`, a
// read-write float buffer of [rows, ROW_STRIDE].
#ifndef TOMOGRAPHY_STATE_GLSL
#define TOMOGRAPHY_STATE_GLSL

const uint ROW_STRIDE = 16;

#ifndef NEG_INF
#define NEG_INF uintBitsToFloat(0xff800000u)
#endif

// The online state of a block of keys: running max m, l = sum e^{x-m}, T = sum e^{x-m}(x-m),
// weighted means and M2 of s and of the logit (weights e^{x-m}), sum e^{x-m} lag, and the
// unweighted count, mean and M2 of the logit.
struct State {
  float m, l, T, ms, m2s, ml, m2l, elag, um, um2, n;
};
const uint STATE = 11;
shared float red[64 * STATE];

State tomo_empty() { return State(NEG_INF, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0); }

void store(uint k, State a) {
  const uint o = k * STATE;
  red[o] = a.m; red[o + 1] = a.l; red[o + 2] = a.T; red[o + 3] = a.ms; red[o + 4] = a.m2s; red[o + 5] = a.ml;
  red[o + 6] = a.m2l; red[o + 7] = a.elag; red[o + 8] = a.um; red[o + 9] = a.um2; red[o + 10] = a.n;
}

State load(uint k) {
  const uint o = k * STATE;
  return State(red[o], red[o + 1], red[o + 2], red[o + 3], red[o + 4], red[o + 5], red[o + 6], red[o + 7], red[o + 8],
               red[o + 9], red[o + 10]);
}

// a <- a and b together. Blocks with keys have finite maxima and l >= 1.
State merge(State a, State b) {
  if (b.n == 0.0) return a;
  if (a.n == 0.0) return b;
  State r;
  r.n = a.n + b.n;
  const float du = b.um - a.um;
  r.um = a.um + du * (b.n / r.n);
  r.um2 = a.um2 + b.um2 + du * du * (a.n * b.n / r.n);
  r.m = max(a.m, b.m);
  const float ca = exp(a.m - r.m), cb = exp(b.m - r.m);
  const float la = ca * a.l, lb = cb * b.l;
  r.l = la + lb;
  r.T = ca * (a.T + (a.m - r.m) * a.l) + cb * (b.T + (b.m - r.m) * b.l);
  const float ds = b.ms - a.ms;
  r.ms = a.ms + ds * (lb / r.l);
  r.m2s = ca * a.m2s + cb * b.m2s + ds * ds * (la * lb / r.l);
  const float dl = b.ml - a.ml;
  r.ml = a.ml + dl * (lb / r.l);
  r.m2l = ca * a.m2l + cb * b.m2l + dl * dl * (la * lb / r.l);
  r.elag = ca * a.elag + cb * b.elag;
  return r;
}

// One key of the row: its unscaled logit, projected coordinate s and lag, at temperature alpha.
// The logit must be finite (a key with no weight at all is the caller's to skip).
void tomo_add(inout State st, float logit, float s, float lag, float alpha) {
  const float x = alpha * logit;
  st.n += 1.0;
  const float du = logit - st.um;
  st.um += du / st.n;
  st.um2 += du * (logit - st.um);
  float w;
  if (x > st.m) {
    // New maximum: every earlier weight shrinks by c; T is re-based to the new maximum.
    const float c = st.l > 0.0 ? exp(st.m - x) : 0.0;
    st.T = st.l > 0.0 ? c * (st.T + (st.m - x) * st.l) : 0.0;
    st.l *= c;
    st.m2s *= c;
    st.m2l *= c;
    st.elag *= c;
    st.m = x;
    w = 1.0;
  } else {
    w = exp(x - st.m);
    st.T += w * (x - st.m);
  }
  const float lw = st.l + w;
  const float ds = s - st.ms;
  st.ms += ds * (w / lw);
  st.m2s += w * ds * (s - st.ms);
  const float dl = logit - st.ml;
  st.ml += dl * (w / lw);
  st.m2l += w * dl * (logit - st.ml);
  st.elag += w * lag;
  st.l = lw;
}

// Merges the workgroup's 64 states (every thread calls it) and writes row r's statistics (thread
// 0); qabs = |q_i|, the norm of the query the logits were formed with.
void tomo_finish(State st, uint lid, uint r, float qabs) {
  store(lid, st);
  barrier();
  for (uint stride = 32; stride > 0; stride >>= 1) {
    if (lid < stride) store(lid, merge(load(lid), load(lid + stride)));
    barrier();
  }
  if (lid != 0) return;
  st = load(0);
  const uint o = r * ROW_STRIDE;
  const bool any = st.n > 0.0 && st.l > 0.0;
  const float log_l = any ? log(st.l) : 0.0;
  rows_out[o + 0] = st.m;
  rows_out[o + 1] = st.l;
  rows_out[o + 2] = any ? max(log_l - st.T / st.l, 0.0) : 0.0;
  rows_out[o + 3] = any ? st.m + log_l : NEG_INF;
  rows_out[o + 4] = any ? 1.0 / st.l : 0.0;
  rows_out[o + 5] = st.ms;
  rows_out[o + 6] = any ? max(st.m2s / st.l, 0.0) : 0.0;
  rows_out[o + 7] = st.ml;
  rows_out[o + 8] = any ? max(st.m2l / st.l, 0.0) : 0.0;
  rows_out[o + 9] = qabs * inversesqrt(float(2 * D));
  rows_out[o + 10] = st.n;
  rows_out[o + 11] = st.um;
  rows_out[o + 12] = st.n > 0.0 ? st.um2 / st.n : 0.0;
  rows_out[o + 13] = any ? st.elag / st.l : 0.0;
  rows_out[o + 14] = qabs;
  rows_out[o + 15] = 0.0;
}

#endif
