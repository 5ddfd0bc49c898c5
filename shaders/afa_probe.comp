#version 450
// Exact AFA attention rectangles (Ahat and the mean decayed mass) over fp32 K/V caches: see common/afa_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "afa_probe_body.glsl"
