#version 450
// Exact attention rectangles and row diagnostics over fp32 K/V caches: see common/rfa_probe_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rfa_probe_body.glsl"
