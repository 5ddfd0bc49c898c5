#version 450
// Exact AFA attention rectangles (Ahat and the mean decayed mass) over fp16 K/V caches: see common/afa_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "afa_probe_body.glsl"
