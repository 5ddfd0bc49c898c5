// Attention tomography of one (batch row, head) of a full AFA layer (docs/DIAGNOSTICS.md §2, §3;
// docs/variant-afa-full.md §5): common/pair_tomography_walk.glsl with the full form's pair terms
// (common/afa_full_pair.glsl) in view VIEW. The "logit" is log of the view's weight (a channel's Q_c
// or the channel mean: each row of them is a distribution, the softmax of its logs), scaled by the
// temperature alpha; s_ij is the plain projection u_i . k_j as for every head. The reweighting map W
// is not normalised: the op refuses that view here. The body of afa_full_tomography(_kv16).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "afa_full_readout_io.glsl"
layout(std430, binding = 5) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 6) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_full_pair.glsl"
#include "tomography_state.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_tomography_walk.glsl"
