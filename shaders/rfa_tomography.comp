#version 450
// Attention tomography of one (batch row, head) (SEEDS.md §4, the Laplace-Radon reading): the
// per-pair work of the diagnostics, recomputed from the caches like rfa_probe, with the logits
// scaled by a temperature alpha (the sweep l -> alpha l of eq. 30).
//
// MODE 0, one thread per query row i of [r0, r1), over every key the row attends to (its causal
// band, or all filled keys without a mask), in one online pass with a running maximum:
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
layout(std430, binding = 3) readonly buffer Kb { vec2 Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_norm2[]; };
layout(std430, binding = 5) readonly buffer KNb { float k_norm2[]; };
layout(std430, binding = 6) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 7) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "rfa_lag_kernels.glsl"
#include "rfa_logit.glsl"

layout(push_constant) uniform Push {
  uint b, h, r0, r1, c0, c1, capacity, heads, filled, window;
  float alpha;
  uint decayed;
} pc;

uint slot_of(uint p) { return p < pc.capacity ? p : p % pc.capacity; }
uint first_key(uint i) { return (pc.window > 0 && i + 1 > pc.window) ? i + 1 - pc.window : 0; }

struct Pair {
  float logit, cross, lag, E;
};

Pair pair_terms(Head P, uint base, uint i, uint j, vec2 ti, float qn) {
  float cross = 0.0;
  const uint ic = base + slot_of(i), jc = base + slot_of(j);
  for (uint d = 0; d < D; ++d) cross += dot(Qc[ic * D + d], Kc[jc * D + d]);
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

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const Head P = load_head(pc.h);
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity;
  if (MODE == 0) {
    if (gid >= rows) return;
    const uint i = pc.r0 + gid;
    const uint ic = base + slot_of(i);
    const vec2 ti = ts[pc.b * pc.capacity + slot_of(i)];
    const float qn = q_norm2[ic];
    const float qabs = sqrt(qn);
    const float inv_q = qabs > 0.0 ? 1.0 / qabs : 0.0;
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    float m = NEG_INF, l = 0.0, T = 0.0;
    float ms = 0.0, m2s = 0.0, ml = 0.0, m2l = 0.0, elag = 0.0;
    float um = 0.0, um2 = 0.0;
    uint n = 0;
    for (uint j = kbeg; j < kend; ++j) {
      const Pair q = pair_terms(P, base, i, j, ti, qn);
      const float s = q.cross * inv_q;
      const float x = pc.alpha * q.logit;
      ++n;
      const float du = q.logit - um;
      um += du / float(n);
      um2 += du * (q.logit - um);
      float w;
      if (x > m) {
        // New maximum: every earlier weight shrinks by c; T is re-based to the new maximum.
        const float c = l > 0.0 ? exp(m - x) : 0.0;
        T = l > 0.0 ? c * (T + (m - x) * l) : 0.0;
        l *= c;
        m2s *= c;
        m2l *= c;
        elag *= c;
        m = x;
        w = 1.0;
      } else {
        w = exp(x - m);
        T += w * (x - m);
      }
      const float lw = l + w;
      const float ds = s - ms;
      ms += ds * (w / lw);
      m2s += w * ds * (s - ms);
      const float dl = q.logit - ml;
      ml += dl * (w / lw);
      m2l += w * dl * (q.logit - ml);
      elag += w * q.lag;
      l = lw;
    }
    const uint o = gid * ROW_STRIDE;
    const bool any = n > 0 && l > 0.0;
    const float log_l = any ? log(l) : 0.0;
    rows_out[o + 0] = m;
    rows_out[o + 1] = l;
    rows_out[o + 2] = any ? max(log_l - T / l, 0.0) : 0.0;
    rows_out[o + 3] = any ? m + log_l : NEG_INF;
    rows_out[o + 4] = any ? 1.0 / l : 0.0;
    rows_out[o + 5] = ms;
    rows_out[o + 6] = any ? max(m2s / l, 0.0) : 0.0;
    rows_out[o + 7] = ml;
    rows_out[o + 8] = any ? max(m2l / l, 0.0) : 0.0;
    rows_out[o + 9] = qabs * inversesqrt(float(2 * D));
    rows_out[o + 10] = float(n);
    rows_out[o + 11] = um;
    rows_out[o + 12] = n > 0 ? um2 / float(n) : 0.0;
    rows_out[o + 13] = any ? elag / l : 0.0;
    rows_out[o + 14] = qabs;
    rows_out[o + 15] = 0.0;
  } else {
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
