#version 450
// Split-k reduce of the SDPA yardstick (see common/attention_body.glsl).
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 1
#define RFA_REDUCE 1
#include "attention_body.glsl"
