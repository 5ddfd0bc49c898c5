#version 450
// Attention tomography of RT-RFA layers over fp32 K/V caches: see common/rt_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rt_tomography_body.glsl"
