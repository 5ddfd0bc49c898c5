#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm (or RMSNorm) over the last dimension: one workgroup per row.
// LayerNorm: y = (x - mean) / sqrt(var + eps) * w + b, with the population variance (PyTorch).
// RMSNorm:   y = x / sqrt(mean(x^2) + eps) * w.
// Two passes over the row (mean, then centred variance) rather than E[x^2] - E[x]^2, which
// cancels catastrophically for rows with a large mean.
layout(local_size_x = 64) in;

layout(constant_id = 0) const bool RMS = false;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { NormPush pc; };

shared float red[64];

float block_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  const float total = red[0];
  barrier();
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint t = gl_LocalInvocationID.x;
  const uint base = row * pc.D;
  float mean = 0.0;
  if (!RMS) {
    float s = 0.0;
    for (uint i = t; i < pc.D; i += 64) s += x[base + i];
    mean = block_sum(s) / float(pc.D);
  }
  float s2 = 0.0;
  for (uint i = t; i < pc.D; i += 64) {
    const float d = x[base + i] - mean;
    s2 += d * d;
  }
  const float inv = inversesqrt(block_sum(s2) / float(pc.D) + pc.eps);
  for (uint i = t; i < pc.D; i += 64) {
    float v = (x[base + i] - mean) * inv * w[i];
    if (pc.has_bias != 0) v += bias[i];
    y[base + i] = v;
  }
}
