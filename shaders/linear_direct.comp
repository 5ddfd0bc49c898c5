#version 450
#extension GL_GOOGLE_include_directive : require
// Linear without shared memory, for CPU Vulkan devices (lavapipe): each invocation computes a 4x4
// block of y straight from x and W, 4 floats of K at a time. There, workgroup barriers cost a
// coroutine switch per invocation and "global" memory is the CPU cache anyway; measured with
// rfa-bench linear this runs ~3x faster than the shared-memory tiles of linear.comp, and faster
// than a transposed-W variant with lane-contiguous loads.
//
// RB rows per invocation: 4 for several rows; 1 for decode steps (1-3 rows), where 4-row blocks
// would compute three clamped duplicate rows for nothing. The workgroup shape follows (8x8 or 64x1).
layout(local_size_x_id = 3, local_size_y_id = 4) in;

layout(constant_id = 0) const bool RELU = false;
layout(constant_id = 1) const bool ACCUMULATE = false;
layout(constant_id = 2) const uint RB = 4;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) buffer Y { float y[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { LinearPush pc; };

void main() {
  const uint c0 = gl_GlobalInvocationID.x * 4, r0 = gl_GlobalInvocationID.y * RB;
  if (c0 >= pc.N || r0 >= pc.M) return;
  // Out-of-range rows/columns are clamped to the last valid one: computed, never stored.
  uint rr[RB], cc[4];
  for (uint i = 0; i < RB; ++i) rr[i] = min(r0 + i, pc.M - 1) * pc.K;
  for (uint j = 0; j < 4; ++j) cc[j] = min(c0 + j, pc.N - 1) * pc.K;
  vec4 acc[RB];
  for (uint i = 0; i < RB; ++i) acc[i] = vec4(0);
  uint k = 0;
  for (; k + 4 <= pc.K; k += 4) {
    vec4 xv[RB], wv[4];
    for (uint i = 0; i < RB; ++i) xv[i] = vec4(x[rr[i] + k], x[rr[i] + k + 1], x[rr[i] + k + 2], x[rr[i] + k + 3]);
    for (uint j = 0; j < 4; ++j) wv[j] = vec4(w[cc[j] + k], w[cc[j] + k + 1], w[cc[j] + k + 2], w[cc[j] + k + 3]);
    for (uint i = 0; i < RB; ++i)
      acc[i] += vec4(dot(xv[i], wv[0]), dot(xv[i], wv[1]), dot(xv[i], wv[2]), dot(xv[i], wv[3]));
  }
  for (; k < pc.K; ++k)
    for (uint i = 0; i < RB; ++i)
      acc[i] += x[rr[i] + k] * vec4(w[cc[0] + k], w[cc[1] + k], w[cc[2] + k], w[cc[3] + k]);
  for (uint i = 0; i < RB; ++i) {
    const uint r = r0 + i;
    if (r >= pc.M) break;
    for (uint j = 0; j < 4; ++j) {
      const uint c = c0 + j;
      if (c >= pc.N) break;
      float v = acc[i][j];
      if (pc.has_bias != 0) v += bias[c];
      if (RELU) v = max(v, 0.0);
      if (ACCUMULATE) v += y[r * pc.N + c];
      y[r * pc.N + c] = v;
    }
  }
}
