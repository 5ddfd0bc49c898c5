#version 450
// Fused RT-RFA attention over fp16 K/V caches: see common/rt_attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "rt_attention_body.glsl"
