#version 450
// Fused RT-RFA attention (directional RFA on the sphere): see common/rt_attention_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rt_attention_body.glsl"
