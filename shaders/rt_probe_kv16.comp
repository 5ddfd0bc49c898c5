#version 450
// Exact RT-RFA attention rectangles (Ahat, and A = Ahat) over fp16 K/V caches: see common/rt_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rt_probe_body.glsl"
