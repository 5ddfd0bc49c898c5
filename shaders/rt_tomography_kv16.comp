#version 450
// Attention tomography of RT-RFA layers over fp16 K/V caches: see common/rt_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rt_tomography_body.glsl"
