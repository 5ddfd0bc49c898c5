#version 450
// Plain scaled-dot-product attention (the yardstick), same tiling as rfa_attention.comp.
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 1
#include "attention_body.glsl"
