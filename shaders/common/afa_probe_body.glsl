// Exact attention weights of an AFA layer for a rectangle of one (batch row, head), from the caches
// and the row statistics the fused AFA kernel left (ops/rfa_probe.hpp, record_rfa_probe), and the
// row diagnostics of RFA's probe (record_rfa_row_diagnostics), with AFA's pair logit
// (common/afa_pair.glsl, the fused kernel's own arithmetic). The body of the kernels afa_probe and
// afa_probe_kv16 (shaders/variants.cmake); the walk is common/pair_probe_walk.glsl, shared with RT.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij (1/D) sum_k e^{-mu_k |l_ij|}           the mean decayed mass
// RFA's A = Ahat E is the weight times the pair's one decay. An AFA pair has D decays, one per
// channel (the value side shrinks channel k by e_k, docs/variant-afa.md §4), so no single matrix
// is "the decayed weight"; A is the channel mean of the per-channel weights Ahat e_k (its row sums
// are the per-channel decayed mass of docs/variant-afa.md §11 averaged over channels): it equals
// Ahat where every mu_k = 0 (the unitary switch) and Ahat e^{-mu |l|}, RFA's form, where one mu
// serves every channel.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
#include "afa_layer_table.h"
layout(constant_id = kAfaReadD) const uint D = 32;         // complex channels per head
layout(constant_id = kAfaReadCausal) const bool CAUSAL = true;
layout(constant_id = kAfaReadPrec) const uint PREC = 0;    // rfa::AfaPrecision
layout(constant_id = kAfaReadUnitary) const bool UNITARY = false;
layout(constant_id = kAfaReadPchan) const uint PCHAN = 0;  // the channel of PREC 1
layout(constant_id = kAfaReadMode) const uint MODE = 0;    // 0: rectangle of Ahat and A, 1: row diagnostics
layout(constant_id = kAfaReadView) const uint VIEW = kAfaViewMean;  // afa_layer_table.h: a channel, the mean or W
#define AFA_VIEW VIEW

// The layer's table (afa_layer_table.h): [H*D] (mu, sigma2, eta2, gamma2),
// [H*D] (mix gate, w, e^{lambda h}), [H] (nu, alpha^2, b, eps). No omega: the caches hold Q~, K~
// in one frame, where the residual needs no rotation.
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 5) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 6) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols], or [rows, 8] (MODE 1)
layout(std430, binding = 7) writeonly buffer O1 { float a_out[]; };     // [rows, cols] (MODE 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_pair.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

#include "pair_probe_walk.glsl"
