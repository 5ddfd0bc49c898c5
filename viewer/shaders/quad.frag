#version 450
layout(set = 0, binding = 0) uniform sampler2D heatmap;
layout(location = 0) in vec2 v_uv;
layout(location = 0) out vec4 color;
void main() { color = texture(heatmap, v_uv); }
