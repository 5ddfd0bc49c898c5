#version 450
// The viewer's per-head curves over a caller-given lag grid: out[h][0..3][k] = E, Vcov, P, B.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(constant_id = kLagCov) const uint COV = 1;
layout(constant_id = kLagBias) const uint BIAS = 1;
layout(constant_id = kLagPrec) const uint PREC = 1;
const bool WANT_VCOV = true;

layout(std430, binding = 0) readonly buffer Hb { float hp[]; };
layout(std430, binding = 1) readonly buffer Lb { float lags[]; };
layout(std430, binding = 2) writeonly buffer Ob { float curves[]; };

#include "rfa_lag_kernels.glsl"

#include "push_layouts.h"
layout(push_constant) uniform Push { CurvesPush pc; };

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  if (gid >= pc.n_lags * pc.heads) return;
  const uint h = gid / pc.n_lags, k = gid % pc.n_lags;
  const LagTerms t = lag_terms(load_head(h), lags[k]);
  curves[(h * 4 + 0) * pc.n_lags + k] = t.E;
  curves[(h * 4 + 1) * pc.n_lags + k] = t.vcov;
  curves[(h * 4 + 2) * pc.n_lags + k] = t.P;
  curves[(h * 4 + 3) * pc.n_lags + k] = t.B;
}
