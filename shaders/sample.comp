#version 450
// Token sampling with probabilities in fp32: see common/sample_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define SAMPLE_F64 0
#include "sample_body.glsl"
