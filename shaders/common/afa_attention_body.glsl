// The fused AFA kernel: Adaptive Filter Attention, memory-optimised form (docs/variant-afa.md §4),
// over the caches the RFA rotate pass fills (Q~, K~, V~ rotated by e^{-i omega_k t}, so a key's
// rotation to the query's time is already in the frame). The body of the kernels afa_attention and
// afa_attention_kv16 (shaders/variants.cmake).
//
// Per pair (i, j): the logit and the channels' decays e_k = exp(-mu_k |l|) from common/afa_pair.glsl
// (shared with the probe, which must reproduce these weights), then
//   acc_k += exp(logit - m) e_k V~_jk                     (online softmax, rescaled per key)
// D exponentials per pair: the price of per-channel decays (RFA has one per pair); the e_k stay
// in registers between the logit and the value sum.
// Epilogue: normalise, optional mix with the query's own value, counter-rotate by omega_k t_i,
// and the prediction e^{lambda_k h} (a per-channel complex factor the host computes in double).
// Tied iterations (docs/variant-afa-full.md §3) run the kernel once per pass: an earlier pass
// (STAGE 1) scores the iterate z~_k (bound as Q, K and V: the caches of its pass) and writes z~_{k+1}
// = mix(z~_k, aggregate) + g (z~_k - z~_{k-1}) into the next pass's caches, still in the frame; the
// last pass (STAGE 0) counter-rotates and predicts. The mix and the momentum are per channel and
// per position, so they commute with the frame's rotation.
//
// Threads, tiles and the merge of a row's split keys: the walk shared with RT-RFA
// (common/pair_attention_walk.glsl). The head's channel parameters sit in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(local_size_x_id = kAfaAttnWG) in;
layout(constant_id = kAfaAttnWG) const uint WG = 64;          // BQ * S
layout(constant_id = kAfaAttnBQ) const uint BQ = 64;          // query rows per workgroup
layout(constant_id = kAfaAttnS) const uint S = 1;             // threads per query row
layout(constant_id = kAfaAttnBK) const uint BK = 32;          // keys per shared-memory tile
layout(constant_id = kAfaAttnD) const uint D = 32;            // complex channels per head
layout(constant_id = kAfaAttnCausal) const bool CAUSAL = true;
layout(constant_id = kAfaAttnPrec) const uint PREC = 0;       // rfa::AfaPrecision
layout(constant_id = kAfaAttnUnitary) const bool UNITARY = false;
layout(constant_id = kAfaAttnMix) const bool MIX = false;
layout(constant_id = kAfaAttnDirectKv) const bool DIRECT_KV = false;
layout(constant_id = kAfaAttnPchan) const uint PCHAN = 0;     // the channel of PREC 1
layout(constant_id = kAfaAttnKvTile) const uint KV_TILE = 1;  // BK * D with shared key tiles, else 1
layout(constant_id = kAfaAttnDC) const uint DC = 8;           // complex components merged per round (S > 1)
layout(constant_id = kAfaAttnRED) const uint RED = 1;         // WG * DC when S > 1, else 1
layout(constant_id = kAfaAttnStage) const uint STAGE = 0;     // 0: the layer's output, 1: the next pass's caches,
                                                              // 2: the output and z~_{n+1} kept in next_q
layout(constant_id = kAfaAttnMomentum) const bool MOMENTUM = false;

#define NEG_INF uintBitsToFloat(0xff800000u)

// The layer's table (afa_layer_table.h): [H*D] (mu, sigma2, eta2, gamma2), then [H*D]
// (mix gate, w, Re, Im of e^{lambda h}), then [H] (nu, alpha^2, b, eps).
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Wb { vec2 omega[]; };  // (hi, lo) [H*D]
layout(std430, binding = 2) readonly buffer Tb { vec2 ts[]; };     // (hi, lo) [B, capacity]
layout(std430, binding = 3) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 4) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 5) readonly buffer Vb { KV_T Vc[]; };
layout(std430, binding = 6) writeonly buffer Ob { float attn_out[]; };
layout(std430, binding = 7) writeonly buffer Mb { float row_max[]; };
layout(std430, binding = 8) writeonly buffer Lb { float row_sum[]; };
layout(std430, binding = 9) readonly buffer Pb { uint pos0; uint kv_len; } span;
layout(std430, binding = 10) writeonly buffer NQb { vec2 next_q[]; };   // STAGE 1: the next pass's queries
layout(std430, binding = 11) writeonly buffer NKb { KV_T next_kv[]; };  // ... and its keys = values
layout(std430, binding = 12) readonly buffer Zb { KV_T zprev[]; };      // MOMENTUM: z~_{k-1}

#include "push_layouts.h"
layout(push_constant) uniform Push { AttentionPush pc; };

#include "rfa_cache_ring.glsl"
#include "rfa_phase.glsl"
#include "direct_walk.glsl"
#include "afa_pair.glsl"

// The pair logit's keys: `key` is the key's cache cell (DIRECT_KV) or its row in the shared tile.
vec2 afa_key(uint key, uint k) { return DIRECT_KV ? KV_LOAD(Kc[key * D + k]) : sk[key * D + k]; }

// The walk's pair terms (common/pair_attention_walk.glsl): the keys' decays e_k stay in registers
// between the logit and the value sum.
void pair_stage(uint j0, uint nk, uint base, uint tid) {}

void pair_visit(const vec2 q[D], PairRow r, uint base, uint ks, uint jj, float lag, inout float m, inout float l,
                inout vec2 acc[D]) {
  float ek[D];
  const float logit = afa_pair_logit(q, r.qn, DIRECT_KV ? base + ks : jj, lag, r.hv, ek);
  const float p = online_softmax_add(logit, m, l, acc);
  [[unroll]] for (uint k = 0; k < D; ++k) acc[k] += (p * ek[k]) * walk_value(base, ks, jj, k);
}

// Epilogue: normalise, mix, counter-rotate by omega_k t_i, predict by e^{lambda_k h}.
void pair_epilogue(PairRow r, uint h, uint HD, uint icell, uint orow, vec2 ti, float inv_l, vec2 acc[D]) {
  const float g = afa[kAfaBlocks * HD + pc.heads][kAfaMomentum];
  [[unroll]] for (uint k = 0; k < D; ++k) {  // unrolled: acc[k] stays in registers
    const vec4 x = afa[HD + h * D + k];  // the second channel block: gate, w, e^{lambda h}
    const float gate = x[kAfaMix];
    const vec2 prediction = vec2(x[kAfaPredRe], x[kAfaPredIm]);
    vec2 z = acc[k] * inv_l;
    const vec2 cur = KV_LOAD(Vc[icell * D + k]);  // this pass's value: V~, or the iterate z~_k
    if (MIX) z = (1.0 - gate) * cur + gate * z;  // in the frame: same mix
    if (MOMENTUM) z += g * (cur - KV_LOAD(zprev[icell * D + k]));
    if (STAGE == 1) {
      next_q[icell * D + k] = z;
      next_kv[icell * D + k] = KV_STORE(z);
      continue;
    }
    if (STAGE == 2) next_q[icell * D + k] = z;  // the last iterate, for the readouts of the trajectory
    z = rfa_cmul(rfa_cmul(z, rfa_cis(rfa_angle(omega[h * D + k], ti))), prediction);
    attn_out[orow + h * D + k] = z.x;
    attn_out[orow + HD + h * D + k] = z.y;
  }
}

#include "pair_attention_walk.glsl"
