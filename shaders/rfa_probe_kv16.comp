#version 450
// Exact attention rectangles and row diagnostics over fp16 K/V caches: see common/rfa_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rfa_probe_body.glsl"
