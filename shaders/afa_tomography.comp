#version 450
// Attention tomography of AFA layers over fp32 K/V caches: see common/afa_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "afa_tomography_body.glsl"
