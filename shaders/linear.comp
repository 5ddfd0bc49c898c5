#version 450
#extension GL_GOOGLE_include_directive : require
// y[M, N] = x[M, K] W[N, K]^T + b[N]   (PyTorch nn.Linear), optionally ReLU, optionally y += ...
// 16x16 threads, each computes a 4x4 block of a 64x64 output tile; K streams through shared
// memory in slabs of 16. Shared tiles are stored k-major with a +4 pad so the inner loop reads
// consecutive addresses across a row of threads.
layout(local_size_x = 16, local_size_y = 16) in;

layout(constant_id = 0) const bool RELU = false;        // y = max(y, 0) after the bias
layout(constant_id = 1) const bool ACCUMULATE = false;  // y += x W^T + b (fused residual add)

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) buffer Y { float y[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { LinearPush pc; };

const uint TILE = 64;
const uint BK = 16;
shared float As[BK][TILE + 4];
shared float Bs[BK][TILE + 4];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16 + tx;
  const uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0; k0 < pc.K; k0 += BK) {
    for (uint i = 0; i < 4; ++i) {
      const uint e = tid + i * 256;  // 0..1023 over a 64 x 16 slab
      const uint r = e / BK, kk = e % BK;
      const uint gk = k0 + kk;
      const uint gr = row0 + r, gc = col0 + r;
      As[kk][r] = (gr < pc.M && gk < pc.K) ? x[gr * pc.K + gk] : 0.0;
      Bs[kk][r] = (gc < pc.N && gk < pc.K) ? w[gc * pc.K + gk] : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float a[4], b[4];
      for (uint i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
      for (uint j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
      for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier();
  }

  for (uint i = 0; i < 4; ++i) {
    const uint r = row0 + ty + 16 * i;
    if (r >= pc.M) continue;
    for (uint j = 0; j < 4; ++j) {
      const uint c = col0 + tx + 16 * j;
      if (c >= pc.N) continue;
      float v = acc[i][j];
      if (pc.has_bias != 0) v += bias[c];
      if (RELU) v = max(v, 0.0);
      if (ACCUMULATE) v += y[r * pc.N + c];
      y[r * pc.N + c] = v;
    }
  }
}
