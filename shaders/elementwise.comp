#version 450
// y = alpha * a + beta * b over n floats (beta = 0 reads no b: a plain scale).
layout(local_size_x = 128) in;  // the spec minimum of maxComputeWorkGroupInvocations

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint n;
  float alpha, beta;
} pc;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 128;
  if (i >= pc.n) return;
  float v = pc.alpha * a[i];
  if (pc.beta != 0.0) v += pc.beta * b[i];
  y[i] = v;
}
