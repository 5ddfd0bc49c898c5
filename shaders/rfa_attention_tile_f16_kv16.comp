#version 450
// Fused RFA attention, cooperative tile (common/attention_tile.glsl) over fp16 K/V caches, fp16 products.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define RFA_SDPA 0
#define RFA_TILE 1
#define RFA_KV_F16 1
#define RFA_TILE_F16 1
#include "attention_body.glsl"
