#version 450
// Fused RFA attention over the rotated caches: see common/attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 0
#include "attention_body.glsl"
