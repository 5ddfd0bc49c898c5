#version 450
// Attention tomography rows over fp32 K/V caches: see common/rfa_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rfa_tomography_body.glsl"
