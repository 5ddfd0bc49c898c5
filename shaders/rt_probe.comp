#version 450
// Exact RT-RFA attention rectangles (Ahat, and A = Ahat) over fp32 K/V caches: see common/rt_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rt_probe_body.glsl"
