#version 450
// Fused AFA attention over fp16 K/V caches: see common/afa_attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define RFA_KV_F16 1
#include "afa_attention_body.glsl"
