#version 450
// Split-k reduce of the fused RFA attention: merges the key splits of each row, then the
// epilogue (see common/attention_body.glsl).
#extension GL_GOOGLE_include_directive : require
#define RFA_SDPA 0
#define RFA_REDUCE 1
#include "attention_body.glsl"
