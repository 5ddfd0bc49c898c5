#version 450
// The SDPA yardstick, cooperative tile (common/attention_tile.glsl).
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 1
#define RFA_TILE 1
#include "attention_body.glsl"
