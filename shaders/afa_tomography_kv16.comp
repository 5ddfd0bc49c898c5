#version 450
// Attention tomography of AFA layers over fp16 K/V caches: see common/afa_tomography_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "afa_tomography_body.glsl"
