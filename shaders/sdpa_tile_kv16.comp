#version 450
// The SDPA yardstick, cooperative tile (common/attention_tile.glsl) over fp16 K/V caches.
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 1
#define RFA_TILE 1
#define RFA_KV_F16 1
#include "attention_body.glsl"
