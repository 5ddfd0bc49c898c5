#version 450
#extension GL_GOOGLE_include_directive : require
// Appends a call's new items to a ring: src [B, n_new, width] floats -> dst [B, capacity, width] at
// slot (pos0 + i) % capacity, pos0 read from the span buffer at run time (so a recorded command
// buffer serves every step of a stream). Sessions append each step's timestamps this way.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Pb { uint pos0; uint kv_len; } span;
layout(std430, binding = 1) readonly buffer Sb { float src[]; };
layout(std430, binding = 2) writeonly buffer Db { float dst[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { RingAppendPush pc; };

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  if (gid >= pc.batch * pc.n_new * pc.width) return;
  const uint c = gid % pc.width, r = gid / pc.width;
  const uint b = r / pc.n_new, i = r % pc.n_new;
  const uint slot = (span.pos0 + i) % pc.capacity;
  dst[(b * pc.capacity + slot) * pc.width + c] = src[gid];
}
