#version 450
// The lag table of the fused kernel's integer-lag fast path: for every head and integer lag
// k in [0, n_lags), table[h * n_lags + k] = (E, B, P, E^2) from lag_terms() itself, so a pair whose
// float lag equals k reads exactly what the exact path would compute (docs/math.md §9). E^2 fills
// the spare slot: the fused kernel's residual reads it instead of squaring E (KernelOptions::
// attention_lag_e2), the same fp32 product either way.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(constant_id = kLagCov) const uint COV = 1;
layout(constant_id = kLagBias) const uint BIAS = 1;
layout(constant_id = kLagPrec) const uint PREC = 1;
const bool WANT_VCOV = false;

layout(std430, binding = 0) readonly buffer Hb { float hp[]; };
layout(std430, binding = 1) writeonly buffer Ob { vec4 table[]; };

#include "rfa_lag_kernels.glsl"

#include "push_layouts.h"
layout(push_constant) uniform Push { CurvesPush pc; };

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  if (gid >= pc.n_lags * pc.heads) return;
  const uint h = gid / pc.n_lags, k = gid % pc.n_lags;
  const LagTerms t = lag_terms(load_head(h), float(k));
  table[gid] = vec4(t.E, t.B, t.P, t.E2);
}
