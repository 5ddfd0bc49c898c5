#version 450
#extension GL_GOOGLE_include_directive : require
// Token embedding lookup: y[r, :] = table[ids[r], :]. Ids were range-checked on the host.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 1) readonly buffer Table { float table[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { EmbedPush pc; };

void main() {
  const uint r = gl_WorkGroupID.y;
  const uint c = gl_GlobalInvocationID.x;
  if (r >= pc.rows || c >= pc.dim) return;
  y[r * pc.dim + c] = table[ids[r] * pc.dim + c];
}
