#version 450
#extension GL_GOOGLE_include_directive : require
// Linear for few rows (decode steps): y[M, N] = x[M, K] W[N, K]^T + b. One workgroup of 64
// threads per (row, 4 outputs): the 64 threads stride over K, reading W rows contiguously, and
// reduce in shared memory. The 64x64 tiled kernel would waste 63/64 of its work at M = 1.
layout(local_size_x = 64) in;

layout(constant_id = 0) const bool RELU = false;
layout(constant_id = 1) const bool ACCUMULATE = false;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) buffer Y { float y[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { LinearPush pc; };

const uint OUTS = 4;
shared float red[OUTS][64];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.y;
  const uint c0 = gl_WorkGroupID.x * OUTS;
  float acc[OUTS];
  for (uint j = 0; j < OUTS; ++j) acc[j] = 0.0;
  for (uint k = t; k < pc.K; k += 64) {
    const float xv = x[row * pc.K + k];
    for (uint j = 0; j < OUTS; ++j)
      if (c0 + j < pc.N) acc[j] = fma(xv, w[(c0 + j) * pc.K + k], acc[j]);
  }
  for (uint j = 0; j < OUTS; ++j) red[j][t] = acc[j];
  barrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (t < s)
      for (uint j = 0; j < OUTS; ++j) red[j][t] += red[j][t + s];
    barrier();
  }
  if (t < OUTS && c0 + t < pc.N) {
    const uint c = c0 + t;
    float v = red[t][0];
    if (pc.has_bias != 0) v += bias[c];
    if (RELU) v = max(v, 0.0);
    if (ACCUMULATE) v += y[row * pc.N + c];
    y[row * pc.N + c] = v;
  }
}
