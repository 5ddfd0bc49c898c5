// The fused AFA kernel: Adaptive Filter Attention, memory-optimised form (docs/variant-afa.md §4),
// over the caches the RFA rotate pass fills (Q~, K~, V~ rotated by e^{-i omega_k t}, so a key's
// rotation to the query's time is already in the frame). Included by afa_attention.comp and
// afa_attention_kv16.comp.
//
// Per pair (i, j): the logit and the channels' decays e_k = exp(-mu_k |l|) from common/afa_pair.glsl
// (shared with the probe, which must reproduce these weights), then
//   acc_k += exp(logit - m) e_k V~_jk                     (online softmax, rescaled per key)
// D exponentials per pair: the price of per-channel decays (RFA has one per pair); the e_k stay
// in registers between the logit and the value sum.
// Epilogue: normalise, optional mix with the query's own value, counter-rotate by omega_k t_i,
// and the prediction e^{lambda_k h} (a per-channel complex factor the host computes in double).
//
// Threads: BQ rows per workgroup, S threads per row splitting its keys (S > 1 for decode steps),
// merged through shared memory; keys staged in shared tiles of BK (GPUs) or read from the cache
// (DIRECT_KV, CPU devices). The head's channel parameters sit in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;  // BQ * S
layout(constant_id = 1) const uint BQ = 64;  // query rows per workgroup
layout(constant_id = 2) const uint S = 1;    // threads per query row
layout(constant_id = 3) const uint BK = 32;  // keys per shared-memory tile
layout(constant_id = 4) const uint D = 32;   // complex channels per head
layout(constant_id = 5) const bool CAUSAL = true;
layout(constant_id = 6) const uint PREC = 0;  // rfa::AfaPrecision
layout(constant_id = 7) const bool UNITARY = false;
layout(constant_id = 8) const bool MIX = false;
layout(constant_id = 9) const bool DIRECT_KV = false;
layout(constant_id = 10) const uint PCHAN = 0;  // the channel of PREC 1
layout(constant_id = 11) const uint KV_TILE = 1;  // BK * D with shared key tiles, else 1
layout(constant_id = 12) const uint DC = 8;       // complex components merged per round (S > 1)
layout(constant_id = 13) const uint RED = 1;      // WG * DC when S > 1, else 1

#define NEG_INF uintBitsToFloat(0xff800000u)

// The layer's table (ops/afa_attention.cpp): [H*D] (mu, sigma2, eta2, gamma2), then [H*D]
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

#include "push_layouts.h"
layout(push_constant) uniform Push { AttentionPush pc; };

#include "rfa_cache_ring.glsl"
#include "rfa_phase.glsl"
#include "direct_walk.glsl"
#include "afa_pair.glsl"

// The pair logit's keys: `key` is the key's cache cell (DIRECT_KV) or its row in the shared tile.
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
  const vec4 hv = afa[2 * HD + h];  // (nu, alpha^2, b, eps)

  afa_load_head(h, HD, tid, WG);
  barrier();

  const vec2 ti = row_live ? ts[tbase + slot_of(i)] : vec2(0.0);
  vec2 q[D];
  const float qn = afa_load_query(icell, row_live, q);
  float m = NEG_INF, l = 0.0;
  vec2 acc[D];
  [[unroll]] for (uint k = 0; k < D; ++k) acc[k] = vec2(0.0);

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
        float ek[D];
        const float logit = afa_pair_logit(q, qn, DIRECT_KV ? base + ks : jj, afa_lag(ti, walk_time(tbase, ks, jj)), hv, ek);
        const float p = online_softmax_add(logit, m, l, acc);
        [[unroll]] for (uint k = 0; k < D; ++k) acc[k] += (p * ek[k]) * walk_value(base, ks, jj, k);
      }
    }
    if (!DIRECT_KV) barrier();
  }

  if (S > 1) merge_row_splits(tid, rloc, sidx, m, l, acc);  // decode steps split a row's keys
  if (!row_live || sidx != 0) return;

  // Epilogue: normalise, mix, counter-rotate by omega_k t_i, predict by e^{lambda_k h}.
  const bool has_keys = l > 0.0;
  const float inv_l = has_keys ? 1.0 / l : 0.0;
  const uint orow = (b * pc.n_new + qi) * 2 * HD;
  [[unroll]] for (uint k = 0; k < D; ++k) {  // unrolled: acc[k] stays in registers
    const vec4 x = afa[HD + h * D + k];  // gate, w, e^{lambda h}
    vec2 z = acc[k] * inv_l;
    if (MIX) z = (1.0 - x.x) * KV_LOAD(Vc[icell * D + k]) + x.x * z;  // in the frame: same mix
    z = rfa_cmul(rfa_cmul(z, rfa_cis(rfa_angle(omega[h * D + k], ti))), x.zw);
    attn_out[orow + h * D + k] = z.x;
    attn_out[orow + HD + h * D + k] = z.y;
  }
  row_max[icell] = has_keys ? m : NEG_INF;
  row_sum[icell] = l;
}
