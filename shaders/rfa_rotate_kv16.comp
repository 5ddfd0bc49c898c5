#version 450
// Input norm and rotation into the stationary frame over fp16 K/V caches: see common/rfa_rotate_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rfa_rotate_body.glsl"
