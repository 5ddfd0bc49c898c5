// Attention tomography of one (batch row, head) of a full AFA layer (docs/DIAGNOSTICS.md §2, §3;
// docs/variant-afa-full.md §5): common/pair_tomography_walk.glsl with the full form's pair terms
// (common/afa_full_pair.glsl) in view VIEW. The "logit" is log of the view's weight (a channel's Q_c
// or the channel mean: each row of them is a distribution, the softmax of its logs), scaled by the
// temperature alpha; s_ij is the plain projection u_i . k_j as for every head. The reweighting map W
// is not normalised: the op refuses that view here. The body of afa_full_tomography(_kv16).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them (AFA's readout ids)
#include "afa_layer_table.h"
layout(constant_id = kAfaReadD) const uint D = 32;         // complex channels per head
layout(constant_id = kAfaReadCausal) const bool CAUSAL = true;
layout(constant_id = kAfaReadUnitary) const bool UNITARY = false;
layout(constant_id = kAfaReadMode) const uint MODE = 0;    // 0: row statistics, 1: the matrix P(alpha)
layout(constant_id = kAfaReadView) const uint VIEW = kAfaViewMean;  // a channel or the mean
#define AFA_VIEW VIEW
#define AFA_FULL_READOUT 1

layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer Db { float den_in[]; };  // den_k [cells * D]
layout(std430, binding = 5) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 6) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_full_pair.glsl"
#include "tomography_state.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_tomography_walk.glsl"
