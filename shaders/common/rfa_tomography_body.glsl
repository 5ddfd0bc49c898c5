// Attention tomography of one (batch row, head) (docs/DIAGNOSTICS.md §3, the Laplace-Radon reading): the
// per-pair work of the diagnostics, recomputed from the caches like rfa_probe, with the logits
// scaled by a temperature alpha (the sweep l -> alpha l of eq. 30).
//
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
// every key the row attends to (its causal band, or all filled keys without a mask): each of the 64
// threads makes one online pass with a running maximum over every 64th key, then the 64 partial
// states merge in shared memory (the merge rules below are those of the online pass, for two
// blocks at once), so a short window still spreads over many workgroups:
//   x_ij = alpha logit_ij,  p_ij = exp(x_ij - m_i) / l_i
//   entropy H_i = log l_i - T_i / l_i with T_i = sum_j e^{x_ij - m_i} (x_ij - m_i) <= 0: kept
//     relative to the running max (and rescaled with it), so a sharp row (large logits, tiny H)
//     loses nothing to cancellation, unlike log Z - E_p[x];
//   log Z_i = m_i + log l_i;  max weight = 1 / l_i (m_i is the row maximum);
//   E_p[s], Var_p[s] of the projected coordinate s_ij = u_i . K~_j = Re(Q~_i^H K~_j) / |Q~_i|,
//     and E_p[logit], Var_p[logit], by the weighted West recurrence: rescaling every earlier
//     weight by e^{m_old - m_new} scales the sum of weights and M2 and leaves the mean alone;
//   the uniform (unweighted) mean and variance of the unscaled logits (Welford);
//   tau_i = |Q~_i| / sqrt(2 D) (real dimension d = 2D) and the expected lag under p.
//   out [rows, 16]: m, l, H, log Z, p_max, E[s], Var[s], E[logit], Var[logit], tau, keys,
//   mean logit, var logit (uniform), expected lag, |Q~|, 0.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i
//   (times E_ij when DECAYED), 0 where masked, from the MODE 0 rows of the same alpha.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;
layout(constant_id = 1) const uint COV = 1;
layout(constant_id = 2) const uint BIAS = 1;
layout(constant_id = 3) const uint PREC = 1;
layout(constant_id = 4) const bool ROBUST = true;
layout(constant_id = 5) const bool FULL_RESID = true;
layout(constant_id = 6) const bool CAUSAL = true;
layout(constant_id = 7) const uint MODE = 0;  // 0: row statistics, 1: the matrix P(alpha)
const bool WANT_VCOV = false;
const uint ROW_STRIDE = 16;

layout(std430, binding = 0) readonly buffer Hb { float hp[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_norm2[]; };
layout(std430, binding = 5) readonly buffer KNb { float k_norm2[]; };
layout(std430, binding = 6) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 7) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "rfa_lag_kernels.glsl"
#include "rfa_logit.glsl"

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"

struct Pair {
  float logit, cross, lag, E;
};

Pair pair_terms(Head P, uint base, uint i, uint j, vec2 ti, float qn) {
  const uint ic = base + slot_of(i), jc = base + slot_of(j);
  const float cross = cache_cross(ic, jc);
  const vec2 tj = ts[pc.b * pc.capacity + slot_of(j)];
  float lag = (ti.x - tj.x) + (ti.y - tj.y);
  if (!CAUSAL) lag = abs(lag);
  const LagTerms t = lag_terms(P, lag);
  float logit, energy;
  rfa_pair_logit(P, t, qn, k_norm2[jc], cross, logit, energy);
  Pair r;
  r.logit = logit;
  r.cross = cross;
  r.lag = lag;
  r.E = t.E;
  return r;
}

// The online state of a block of keys: running max m, l = sum e^{x-m}, T = sum e^{x-m}(x-m),
// weighted means and M2 of s and of the logit (weights e^{x-m}), sum e^{x-m} lag, and the
// unweighted count, mean and M2 of the logit.
struct State {
  float m, l, T, ms, m2s, ml, m2l, elag, um, um2, n;
};
const uint STATE = 11;
shared float red[64 * STATE];

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

void main() {
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const Head P = load_head(pc.h);
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity;
  if (MODE == 0) {
    const uint lid = gl_LocalInvocationID.x;
    const uint r = pc.row_base + gl_WorkGroupID.x;  // < rows: one group per row
    const uint i = pc.r0 + r;
    const uint ic = base + slot_of(i);
    const vec2 ti = ts[pc.b * pc.capacity + slot_of(i)];
    const float qn = q_norm2[ic];
    const float qabs = sqrt(qn);
    const float inv_q = qabs > 0.0 ? 1.0 / qabs : 0.0;
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    State st = State(NEG_INF, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (uint j = kbeg + lid; j < kend; j += 64) {
      const Pair q = pair_terms(P, base, i, j, ti, qn);
      const float s = q.cross * inv_q;
      const float x = pc.alpha * q.logit;
      st.n += 1.0;
      const float du = q.logit - st.um;
      st.um += du / st.n;
      st.um2 += du * (q.logit - st.um);
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
      const float dl = q.logit - st.ml;
      st.ml += dl * (w / lw);
      st.m2l += w * dl * (q.logit - st.ml);
      st.elag += w * q.lag;
      st.l = lw;
    }
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
  } else {
    const uint gid = gl_GlobalInvocationID.x;
    if (gid >= rows * cols) return;
    const uint r = gid / cols;
    const uint i = pc.r0 + r, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    float v = 0.0;
    const float m = rows_out[r * ROW_STRIDE + 0], l = rows_out[r * ROW_STRIDE + 1];
    if (!masked && l > 0.0) {
      const uint ic = base + slot_of(i);
      const Pair q = pair_terms(P, base, i, j, ts[pc.b * pc.capacity + slot_of(i)], q_norm2[ic]);
      v = exp(pc.alpha * q.logit - m) / l;
      if (pc.decayed != 0) v *= q.E;
    }
    p_out[gid] = v;
  }
}
