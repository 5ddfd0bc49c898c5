// The fused kernel of full (anisotropic) AFA (docs/variant-afa-full.md §2, §4) over the caches RFA's
// rotate pass fills (Q~, K~, V~ rotated by e^{-i omega_k t}). The body of the kernels
// afa_full_attention and afa_full_attention_kv16 (shaders/variants.cmake).
//
// Per query row: per channel a real normaliser den_k and a complex numerator num_k (3D floats of row
// state, no N x N x D tensor); per key the pair terms of common/afa_full_pair.glsl (D exponentials
// for the decays, D divisions for the precisions, one log and one exp for W) and
//   den_k += W P_k,   num_k += W P_k e_k V~_jk
// No running maximum: W <= 1 and every P_k is bounded (cov_k + eps > 0 at every lag, the op's check),
// so the sums cannot overflow and each Q_k = W P_k / den_k comes out of one division per channel.
// Epilogue: Zbar_k = num_k / den_k, the mix, then (STAGE 0) the counter-rotation and the prediction,
// or (STAGE 1, an earlier pass of the tied iterations) z~_{k+1} into the next pass's caches, as
// afa_attention_body.glsl. The row statistics the readouts read: den_k (den_out), m = 0 and
// l = exp((1/D) sum_k log den_k).
//
// Threads and tiles: the direct walk's (common/direct_walk.glsl: BQ rows per workgroup, S threads per
// row merged through shared memory, key tiles of BK in shared memory or keys read from the cache).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "kernel_ids.h"  // the ids, shared with the op that sets them (AFA's: PREC and PCHAN unused)
layout(local_size_x_id = kAfaAttnWG) in;
layout(constant_id = kAfaAttnWG) const uint WG = 64;          // BQ * S
layout(constant_id = kAfaAttnBQ) const uint BQ = 64;          // query rows per workgroup
layout(constant_id = kAfaAttnS) const uint S = 1;             // threads per query row
layout(constant_id = kAfaAttnBK) const uint BK = 32;          // keys per shared-memory tile
layout(constant_id = kAfaAttnD) const uint D = 32;            // complex channels per head
layout(constant_id = kAfaAttnCausal) const bool CAUSAL = true;
layout(constant_id = kAfaAttnUnitary) const bool UNITARY = false;
layout(constant_id = kAfaAttnMix) const bool MIX = false;
layout(constant_id = kAfaAttnDirectKv) const bool DIRECT_KV = false;
layout(constant_id = kAfaAttnKvTile) const uint KV_TILE = 1;  // BK * D with shared key tiles, else 1
layout(constant_id = kAfaAttnDC) const uint DC = 8;           // complex components merged per round (S > 1)
layout(constant_id = kAfaAttnRED) const uint RED = 1;         // WG * DC when S > 1, else 1
layout(constant_id = kAfaAttnStage) const uint STAGE = 0;     // 0: the layer's output, 1: the next pass's caches,
                                                              // 2: the output and z~_{n+1} kept in next_q
layout(constant_id = kAfaAttnMomentum) const bool MOMENTUM = false;

#define NEG_INF uintBitsToFloat(0xff800000u)

// The layer's table (afa_layer_table.h): [H*D] (mu, sigma2, eta2, gamma2), [H*D] (mix gate, -,
// Re, Im of e^{lambda h}), [H] (nu, alpha^2, -, eps), then the layer's (g, ...).
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
layout(std430, binding = 13) writeonly buffer Db { float den_out[]; };  // den_k [cells * D]

#include "push_layouts.h"
layout(push_constant) uniform Push { AttentionPush pc; };

#include "rfa_cache_ring.glsl"
#include "rfa_phase.glsl"
#include "direct_walk.glsl"
#include "afa_full_pair.glsl"

// The pair terms' keys: `key` is the key's cache cell (DIRECT_KV) or its row in the shared tile.
vec2 afa_key(uint key, uint k) { return DIRECT_KV ? KV_LOAD(Kc[key * D + k]) : sk[key * D + k]; }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint rloc = tid / S, sidx = tid % S;
  const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint q0 = gl_WorkGroupID.x * BQ;
  const uint qi = q0 + rloc;
  const bool row_live = qi < pc.n_new;
  const uint pos0 = span.pos0, kv_len = span.kv_len;
  const uint i = pos0 + qi;
  const uint base = (b * pc.heads + h) * pc.capacity;
  const uint icell = base + slot_of(i);
  const uint tbase = b * pc.capacity;
  const uint HD = pc.heads * D;

  afa_load_head(h, HD, tid, WG);
  barrier();

  const vec2 ti = row_live ? ts[tbase + slot_of(i)] : vec2(0.0);
  vec2 q[D];
  afa_load_query(icell, row_live, q);
  const vec4 hv = afa[kAfaBlocks * HD + h];
  vec2 num[D];
  float den[D];
  [[unroll]] for (uint k = 0; k < D; ++k) {
    num[k] = vec2(0.0);
    den[k] = 0.0;
  }

  const uint last_q = min(q0 + BQ, pc.n_new) - 1;
  const uint kv_end = CAUSAL ? min(kv_len, pos0 + last_q + 1) : kv_len;
  const uint kv_begin = CAUSAL ? first_key(pos0 + q0) : 0;
  const uint row_first = CAUSAL ? first_key(i) : 0;

  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
    if (!DIRECT_KV) {
      stage_key_tile(j0, nk, base, tbase, tid);
      barrier();
    }
    if (row_live) {
      const uint jend = CAUSAL ? (i + 1 > j0 ? min(nk, i + 1 - j0) : 0) : nk;
      const uint jbeg = row_first > j0 ? row_first - j0 : 0;
      for (uint jj = jbeg + sidx; jj < jend; jj += S) {
        const uint ks = slot_of(j0 + jj);
        float ek[D], pk[D];
        const float W = afa_full_pair(q, DIRECT_KV ? base + ks : jj, pair_lag(ti, walk_time(tbase, ks, jj)), hv, ek, pk);
        [[unroll]] for (uint k = 0; k < D; ++k) {
          const float wp = W * pk[k];
          den[k] += wp;
          num[k] += (wp * ek[k]) * walk_value(base, ks, jj, k);
        }
      }
    }
    if (!DIRECT_KV) barrier();
  }

  if (S > 1) {  // decode steps split a row's keys: plain sums (m = 0 makes the merge's rescaling 1)
    float m0 = 0.0, l0 = 0.0;
    merge_row_splits(tid, rloc, sidx, m0, l0, num);
    vec2 dv[D];
    [[unroll]] for (uint k = 0; k < D; ++k) dv[k] = vec2(den[k], 0.0);
    m0 = 0.0;
    merge_row_splits(tid, rloc, sidx, m0, l0, dv);
    [[unroll]] for (uint k = 0; k < D; ++k) den[k] = dv[k].x;
  }
  if (!row_live || sidx != 0) return;

  const uint orow = (b * pc.n_new + qi) * 2 * HD;
  const float g = afa[kAfaBlocks * HD + pc.heads][kAfaMomentum];
  float mean_log_den = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    const vec4 x = afa[HD + h * D + k];  // gate, -, e^{lambda h}
    vec2 z = den[k] > 0.0 ? num[k] / den[k] : vec2(0.0);
    const vec2 cur = KV_LOAD(Vc[icell * D + k]);  // this pass's value: V~, or the iterate z~_k
    if (MIX) z = (1.0 - x[kAfaMix]) * cur + x[kAfaMix] * z;
    if (MOMENTUM) z += g * (cur - KV_LOAD(zprev[icell * D + k]));
    den_out[icell * D + k] = den[k];
    mean_log_den += log(den[k]);
    if (STAGE == 1) {
      next_q[icell * D + k] = z;
      next_kv[icell * D + k] = KV_STORE(z);
      continue;
    }
    if (STAGE == 2) next_q[icell * D + k] = z;  // the last iterate, for the readouts of the trajectory
    z = rfa_cmul(rfa_cmul(z, rfa_cis(rfa_angle(omega[h * D + k], ti))), vec2(x[kAfaPredRe], x[kAfaPredIm]));
    attn_out[orow + h * D + k] = z.x;
    attn_out[orow + HD + h * D + k] = z.y;
  }
  row_max[icell] = 0.0;
  row_sum[icell] = exp(mean_log_den / float(D));
}
