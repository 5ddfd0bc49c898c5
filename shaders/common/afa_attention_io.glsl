// What AFA's two fused kernels share (common/afa_attention_body.glsl, the memory-optimised form;
// afa_full_attention_body.glsl, the full form): their spec constants, buffers and push block, the
// key reads of their pair terms, and the end of a row, channel by channel (afa_finish_channel): the
// mix with this pass's value, the tied iterations' momentum and hand-over to the next pass's caches,
// or the counter-rotation and the prediction into the output.
//
// Tied iterations (docs/variant-afa-full.md §3) run a kernel once per pass: an earlier pass
// (STAGE 1) scores the iterate z~_k (bound as Q, K and V: the caches of its pass) and writes z~_{k+1}
// = mix(z~_k, aggregate) + g (z~_k - z~_{k-1}) into the next pass's caches, still in the frame; the
// last pass (STAGE 0; 2 also keeps z~_{n+1} for the trajectory readout) counter-rotates and predicts.
// The mix and the momentum are per channel and per position, so they commute with the rotation.
#ifndef AFA_ATTENTION_IO_GLSL
#define AFA_ATTENTION_IO_GLSL

#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(local_size_x_id = kAfaAttnWG) in;
layout(constant_id = kAfaAttnWG) const uint WG = 64;          // BQ * S
layout(constant_id = kAfaAttnBQ) const uint BQ = 64;          // query rows per workgroup
layout(constant_id = kAfaAttnS) const uint S = 1;             // threads per query row
layout(constant_id = kAfaAttnBK) const uint BK = 32;          // keys per shared-memory tile
layout(constant_id = kAfaAttnD) const uint D = 32;            // complex channels per head
layout(constant_id = kAfaAttnCausal) const bool CAUSAL = true;
layout(constant_id = kAfaAttnPrec) const uint PREC = 0;       // rfa::AfaPrecision (the memory-optimised form)
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
// (mix gate, w, Re, Im of e^{lambda h}), then [H] (nu, alpha^2, b, eps), then the layer's (g, ...).
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
#include "afa_layer_table.h"

// The pair terms' keys: `key` is the key's cache cell (DIRECT_KV) or its row in the shared tile.
vec2 afa_key(uint key, uint k) { return DIRECT_KV ? KV_LOAD(Kc[key * D + k]) : sk[key * D + k]; }

// Channel k of row icell's estimate z (head h, the caches' frame; HD = H * D): the mix with this pass's
// value (V~, or the iterate z~_k), the momentum, then the next pass's caches (STAGE 1) or the
// counter-rotation by omega_k t_i and the prediction e^{lambda_k h} (a factor the host computes in
// double) into row orow of the output.
void afa_finish_channel(uint h, uint HD, uint icell, uint orow, vec2 ti, uint k, vec2 z) {
  const vec4 x = afa[HD + h * D + k];  // the second channel block: gate, w, e^{lambda h}
  const vec2 cur = KV_LOAD(Vc[icell * D + k]);
  if (MIX) z = (1.0 - x[kAfaMix]) * cur + x[kAfaMix] * z;
  if (MOMENTUM) z += afa[kAfaBlocks * HD + pc.heads][kAfaMomentum] * (cur - KV_LOAD(zprev[icell * D + k]));
  if (STAGE == 1) {
    next_q[icell * D + k] = z;
    next_kv[icell * D + k] = KV_STORE(z);
    return;
  }
  if (STAGE == 2) next_q[icell * D + k] = z;  // the last iterate, for the readouts of the trajectory
  z = rfa_cmul(rfa_cmul(z, rfa_cis(rfa_angle(omega[h * D + k], ti))), vec2(x[kAfaPredRe], x[kAfaPredIm]));
  attn_out[orow + h * D + k] = z.x;
  attn_out[orow + HD + h * D + k] = z.y;
}

#endif
