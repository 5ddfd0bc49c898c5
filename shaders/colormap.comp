#version 450
#extension GL_GOOGLE_include_directive : require
// Colour-maps a probed rectangle of attention weights into packed RGBA8 pixels (one uint per
// pixel, R in the low byte: the byte order of VK_FORMAT_R8G8B8A8_UNORM), later copied into the
// heatmap image. The view [vr0, vr1) x [vc0, vc1) is stretched over W x H pixels; a pixel shows
// the largest weight among the cells it covers (sampled with a stride when it covers many, to
// bound the work per pixel). Cells outside the probed rectangle are pending, cells with j > i of
// a causal model are masked. Must match rfa::heatmap_color() on the host (heatmap.cpp).

layout(local_size_x = 8, local_size_y = 8) in;

layout(std430, binding = 0) readonly buffer Vb { float vals[]; };  // [prows, pcols]
layout(std430, binding = 1) writeonly buffer Ob { uint pixels[]; };  // [H, W]

#include "push_layouts.h"
layout(push_constant) uniform Push { ColormapPush pc; };

#include "viridis_ramp.h"

vec3 ramp(int i) { return vec3(kViridisRamp[3 * i], kViridisRamp[3 * i + 1], kViridisRamp[3 * i + 2]); }

vec3 viridis(float t) {
  const float x = clamp(t, 0.0, 1.0) * 10.0;
  const int i = min(int(x), 9);
  const float f = x - float(i);
  return ramp(i) + f * (ramp(i + 1) - ramp(i));
}

uint pack(vec3 c) {
  uvec3 u = uvec3(clamp(c, 0.0, 1.0) * 255.0 + 0.5);
  return u.r | (u.g << 8) | (u.b << 16) | (255u << 24);
}

float scale(float v) {
  if (pc.log_scale != 0u) {
    if (!(v > 0.0)) return 0.0;
    return clamp(1.0 + log(v / pc.vmax) / (log(10.0) * pc.decades), 0.0, 1.0);
  }
  return clamp(v / pc.vmax, 0.0, 1.0);
}

// The cells [first, last) that pixel p of n pixels covers in a view of `cells` cells.
void span(uint p, uint n, uint cells, out uint first, out uint last) {
  // p * cells stays below 2^32 for images up to 4096 pixels and views up to 2^20 positions.
  first = (p * cells) / n;
  last = max(((p + 1u) * cells) / n, first + 1u);
}

void main() {
  const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
  if (x >= pc.W || y >= pc.H) return;
  uint i0, i1, j0, j1;
  span(y, pc.H, pc.vr1 - pc.vr0, i0, i1);
  span(x, pc.W, pc.vc1 - pc.vc0, j0, j1);
  const uint si = max(1u, (i1 - i0) / 16u), sj = max(1u, (j1 - j0) / 16u);
  const uint pcols = pc.pc1 - pc.pc0;
  float best = -1.0;
  bool pending = false;
  for (uint di = i0; di < i1; di += si) {
    const uint i = pc.vr0 + di;
    for (uint dj = j0; dj < j1; dj += sj) {
      const uint j = pc.vc0 + dj;
      if (pc.causal != 0u && j > i) continue;
      if (i < pc.pr0 || i >= pc.pr1 || j < pc.pc0 || j >= pc.pc1) {
        pending = true;
        continue;
      }
      best = max(best, vals[(i - pc.pr0) * pcols + (j - pc.pc0)]);
    }
  }
  uint color = best >= 0.0 ? pack(viridis(scale(best))) : (pending ? pc.pending_color : pc.masked_color);
  pixels[y * pc.W + x] = color;
}
