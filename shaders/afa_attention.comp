#version 450
// Fused AFA attention (Adaptive Filter Attention, memory-optimised): see common/afa_attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "afa_attention_body.glsl"
