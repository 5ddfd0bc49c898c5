// The readouts of a full (anisotropic) AFA layer for a rectangle of one (batch row, head): the probe
// (MODE 0, Ahat and A) and the row diagnostics (MODE 1) of common/pair_probe_walk.glsl, with the full
// form's pair terms (common/afa_full_pair.glsl, the fused kernel's arithmetic) against the per-channel
// normalisers den_k and the row statistics the kernel left (docs/variant-afa-full.md §5). The view
// VIEW picks the weights: channel c (Q_c and Q_c e_c), the channel mean (rows sum to 1), or the
// reweighting map W (A = W). The body of afa_full_probe and afa_full_probe_kv16.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "afa_full_readout_io.glsl"
layout(std430, binding = 5) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 6) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 7) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols], or [rows, 8] (MODE 1)
layout(std430, binding = 8) writeonly buffer O1 { float a_out[]; };     // [rows, cols] (MODE 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_full_pair.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_probe_walk.glsl"
