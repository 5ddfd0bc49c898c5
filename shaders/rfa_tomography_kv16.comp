#version 450
// Attention tomography rows over fp16 K/V caches: see common/rfa_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rfa_tomography_body.glsl"
