#version 450
// Input norm and rotation into the stationary frame over fp32 K/V caches: see common/rfa_rotate_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rfa_rotate_body.glsl"
