#version 450
// Fused RFA attention over fp16 K/V caches: see common/attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 0
#define RFA_KV_F16 1
#include "attention_body.glsl"
