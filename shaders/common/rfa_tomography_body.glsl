// Attention tomography of one (batch row, head) (docs/DIAGNOSTICS.md §3, the Laplace-Radon reading): the
// per-pair work of the diagnostics, recomputed from the caches like rfa_probe, with the logits
// scaled by a temperature alpha (the sweep l -> alpha l of eq. 30).
//
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
// every key the row attends to (its causal band, or all filled keys without a mask): the row
// statistics of common/tomography_state.glsl at temperature alpha (the sweep l -> alpha l), with
// RFA's pair logit and s_ij = u_i . K~_j = Re(Q~_i^H K~_j) / |Q~_i|.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i
//   (times E_ij when DECAYED), 0 where masked, from the MODE 0 rows of the same alpha.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "rfa_readout_constants.glsl"  // MODE 0: row statistics, 1: the matrix P(alpha)

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

#include "tomography_state.glsl"

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
    State st = tomo_empty();
    for (uint j = kbeg + lid; j < kend; j += 64) {
      const Pair q = pair_terms(P, base, i, j, ti, qn);
      tomo_add(st, q.logit, q.cross * inv_q, q.lag, pc.alpha);
    }
    tomo_finish(st, lid, r, qabs);
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
