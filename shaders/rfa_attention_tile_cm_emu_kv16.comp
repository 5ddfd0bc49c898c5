#version 450
// Fused RFA attention, the cooperative-matrix tile (common/attention_tile.glsl) with emulated matrices.over fp16 K/V caches.
// Each matrix operation emulated by the subgroup's lanes (RFA_TILE_CM_EMU): tests the layout anywhere.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#define RFA_SDPA 0
#define RFA_TILE 1
#define RFA_KV_F16 1
#define RFA_TILE_CM 1
#define RFA_TILE_CM_EMU 1
#include "attention_body.glsl"
