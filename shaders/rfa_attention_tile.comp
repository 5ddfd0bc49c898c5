#version 450
// Fused RFA attention, cooperative tile (common/attention_tile.glsl).
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 0
#define RFA_TILE 1
#include "attention_body.glsl"
