#version 450
// The SDPA yardstick, cooperative tile on cooperative matrices (common/attention_tile.glsl) over fp16 K/V caches.
// Needs VK_NV_cooperative_matrix (16 x 16 x 16, fp16 x fp16 + fp32) and shaderFloat16.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#define RFA_SDPA 1
#define RFA_TILE 1
#define RFA_KV_F16 1
#define RFA_TILE_CM 1
#include "attention_body.glsl"
