#version 450
// One textured rectangle (a heatmap) in framebuffer pixels, as a 4-vertex triangle strip.
layout(push_constant) uniform Push {
  vec4 rect;  // x0, y0, x1, y1 in pixels
  vec4 uv;    // u0, v0, u1, v1
  vec2 fb;    // framebuffer size in pixels
} pc;
layout(location = 0) out vec2 v_uv;
void main() {
  const vec2 corner = vec2(gl_VertexIndex & 1, gl_VertexIndex >> 1);
  const vec2 p = mix(pc.rect.xy, pc.rect.zw, corner);
  v_uv = mix(pc.uv.xy, pc.uv.zw, corner);
  gl_Position = vec4(p / pc.fb * 2.0 - 1.0, 0.0, 1.0);
}
