// Exact attention weights for a rectangle of one (batch row, head) from the caches and the row
// statistics the fused kernel left (MODE 0): Ahat = exp(logit - m) / l, A = Ahat E; and per-row
// diagnostics over all keys of the row (MODE 1): entropy of Ahat, log-partition m + log l, max
// weight, expected lag sum_j A_ij lag_ij, and the mass of A beyond 4 lag thresholds.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "rfa_readout_constants.glsl"  // MODE 0: rectangle of Ahat and A, 1: row diagnostics

layout(std430, binding = 0) readonly buffer Hb { float hp[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer QNb { float q_norm2[]; };
layout(std430, binding = 5) readonly buffer KNb { float k_norm2[]; };
layout(std430, binding = 6) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 7) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 8) writeonly buffer O0 { float out0[]; };  // Ahat [rows, cols] or diagnostics [rows, 8]
layout(std430, binding = 9) writeonly buffer O1 { float out1[]; };  // A [rows, cols] (MODE 0)

#include "rfa_lag_kernels.glsl"
#include "rfa_logit.glsl"

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"

struct Weight {
  float ahat, a, lag, logit;
};

Weight weight(Head P, uint base, uint i, uint j, vec2 ti, float qn, float m, float l) {
  const uint ic = base + slot_of(i), jc = base + slot_of(j);
  const float cross = cache_cross(ic, jc);
  const vec2 tj = ts[pc.b * pc.capacity + slot_of(j)];
  float lag = (ti.x - tj.x) + (ti.y - tj.y);
  if (!CAUSAL) lag = abs(lag);
  const LagTerms t = lag_terms(P, lag);
  float logit, energy;
  rfa_pair_logit(P, t, qn, k_norm2[jc], cross, logit, energy);
  Weight w;
  w.logit = logit;
  w.ahat = l > 0.0 ? exp(logit - m) / l : 0.0;
  w.a = w.ahat * t.E;
  w.lag = lag;
  return w;
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const Head P = load_head(pc.h);
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity;
  if (MODE == 0) {
    if (gid >= rows * cols) return;
    const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    float ahat = 0.0, a = 0.0;
    if (!masked) {
      const uint ic = base + slot_of(i);
      const Weight w = weight(P, base, i, j, ts[pc.b * pc.capacity + slot_of(i)], q_norm2[ic], row_max[ic],
                              row_sum[ic]);
      ahat = w.ahat;
      a = w.a;
    }
    out0[gid] = ahat;
    out1[gid] = a;
  } else {
    if (gid >= rows) return;
    const uint i = pc.r0 + gid;
    const uint ic = base + slot_of(i);
    const float m = row_max[ic], l = row_sum[ic];
    const float log_l = log(l);
    const vec2 ti = ts[pc.b * pc.capacity + slot_of(i)];
    const float qn = q_norm2[ic];
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    float ent = 0.0, mx = 0.0, el = 0.0;
    vec4 beyond = vec4(0.0);
    const vec4 thr = vec4(pc.thr[0], pc.thr[1], pc.thr[2], pc.thr[3]);
    for (uint j = kbeg; j < kend; ++j) {
      const Weight w = weight(P, base, i, j, ti, qn, m, l);
      if (w.ahat > 0.0) ent -= w.ahat * (w.logit - m - log_l);
      mx = max(mx, w.ahat);
      el += w.a * w.lag;
      beyond += mix(vec4(0.0), vec4(w.a), greaterThan(vec4(w.lag), thr));
    }
    const bool any = kend > 0 && l > 0.0;
    out0[gid * 8 + 0] = ent;
    out0[gid * 8 + 1] = any ? m + log_l : uintBitsToFloat(0xff800000u);
    out0[gid * 8 + 2] = mx;
    out0[gid * 8 + 3] = el;
    for (uint k = 0; k < 4; ++k) out0[gid * 8 + 4 + k] = beyond[k];
  }
}
