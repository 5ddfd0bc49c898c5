#version 450
// Token sampling with probabilities in fp64 (devices with shaderFloat64): see common/sample_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define SAMPLE_F64 1
#include "sample_body.glsl"
