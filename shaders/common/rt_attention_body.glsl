// The fused RT-RFA kernel: directional Robust Filter Attention on the sphere
// (docs/variant-rt.md §3), over the caches the rotate pass fills in its UNIT mode: unit directions
// Q~, K~, V~ rotated by e^{-i omega t}, log(m^2 + eps) per token (m = |V| before normalisation) in
// q_norm2/k_norm2, and the unit value unrotated in v_norm. The body of the kernels rt_attention and
// rt_attention_kv16 (shaders/variants.cmake).
//
// Per pair (i, j): the logit of common/rt_pair.glsl (log-domain precision from the pair's lag,
// Student-t or Gaussian score; shared with the probe, rt_probe_body.glsl), then
//   acc += exp(logit - m) V~_j                      (no decay on weights or values)
// Epilogue: ubar = counter-rotated acc / l; the output is the tangent update
// T = ubar - Re(vh_i^H ubar) / |vh_i|^2 vh_i (docs/variant-rt.md §3.4), vh_i from v_norm (fp32
// whatever the cache).
//
// Threads, tiles and the merge of a row's split keys: the walk shared with AFA
// (common/pair_attention_walk.glsl): BQ rows x S threads, shared key tiles or the cache directly.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(local_size_x_id = kRtAttnWG) in;
layout(constant_id = kRtAttnWG) const uint WG = 64;          // BQ * S
layout(constant_id = kRtAttnBQ) const uint BQ = 64;          // query rows per workgroup
layout(constant_id = kRtAttnS) const uint S = 1;             // threads per query row
layout(constant_id = kRtAttnBK) const uint BK = 32;          // keys per shared-memory tile
layout(constant_id = kRtAttnD) const uint D = 32;            // complex dims per head
layout(constant_id = kRtAttnCausal) const bool CAUSAL = true;
layout(constant_id = kRtAttnCov) const uint COV = 0;         // rfa::RtCovariance: 0 stationary, 1 ou_rate
layout(constant_id = kRtAttnKernel) const uint KERNEL = 0;   // rfa::RtKernel: 0 Student-t, 1 Gaussian
layout(constant_id = kRtAttnDirectKv) const bool DIRECT_KV = false;
layout(constant_id = kRtAttnKvTile) const uint KV_TILE = 1;  // BK * D with shared key tiles, else 1
layout(constant_id = kRtAttnDC) const uint DC = 8;           // complex components merged per round (S > 1)
layout(constant_id = kRtAttnRED) const uint RED = 1;         // WG * DC when S > 1, else 1

#define NEG_INF uintBitsToFloat(0xff800000u)

// The layer's table (rt_layer_table.h), three vec4 per head: (mu, s2t, sigma2, eta2),
// (gamma2, tau_th2, nu, kappa), (beta_s, S(0), 0, 0).
layout(std430, binding = 0) readonly buffer Ab { vec4 rt[]; };
layout(std430, binding = 1) readonly buffer Wb { vec2 omega[]; };  // (hi, lo) [H*D]
layout(std430, binding = 2) readonly buffer Tb { vec2 ts[]; };     // (hi, lo) [B, capacity]
layout(std430, binding = 3) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 4) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 5) readonly buffer Vb { KV_T Vc[]; };
layout(std430, binding = 6) readonly buffer QNb { float q_lm2[]; };  // log(m^2 + eps) [B, H, capacity]
layout(std430, binding = 7) readonly buffer KNb { float k_lm2[]; };  // the same values
layout(std430, binding = 8) readonly buffer VNb { float v_unit[]; }; // unit V, unrotated, [B*n_new, 2*H*D]
layout(std430, binding = 9) writeonly buffer Ob { float attn_out[]; };
layout(std430, binding = 10) writeonly buffer Mb { float row_max[]; };
layout(std430, binding = 11) writeonly buffer Lb { float row_sum[]; };
layout(std430, binding = 12) readonly buffer Pb { uint pos0; uint kv_len; } span;

#include "push_layouts.h"
layout(push_constant) uniform Push { AttentionPush pc; };

#include "rfa_cache_ring.glsl"
#include "rfa_phase.glsl"
#include "direct_walk.glsl"
#include "rt_pair.glsl"

shared float slm[BK];  // the tile's log(m_j^2 + eps)

// Key component k of a cache cell (keys read from the cache) or of a row of the shared key tile.
vec2 rt_key(uint key, uint k) { return DIRECT_KV ? KV_LOAD(Kc[key * D + k]) : sk[key * D + k]; }

// The walk's pair terms (common/pair_attention_walk.glsl).
void pair_stage(uint j0, uint nk, uint base, uint tid) {
  for (uint e = tid; e < nk; e += WG) slm[e] = k_lm2[base + slot_of(j0 + e)];
}

void pair_visit(const vec2 q[D], PairRow r, uint base, uint ks, uint jj, float lag, inout float m, inout float l,
                inout vec2 acc[D]) {
  const float lm_j = DIRECT_KV ? k_lm2[base + ks] : slm[jj];
  const float logit = rt_pair_logit(q, r.qq, r.log_q, DIRECT_KV ? base + ks : jj, lm_j, lag, r.ha, r.hb, r.hc);
  if (logit == NEG_INF) return;  // a zero-magnitude key carries no direction: weight 0
  const float p = online_softmax_add(logit, m, l, acc);
  [[unroll]] for (uint k = 0; k < D; ++k) acc[k] += p * walk_value(base, ks, jj, k);
}

// Epilogue: the consensus ubar (counter-rotated), then its tangent part at the token's own value.
void pair_epilogue(PairRow r, uint h, uint HD, uint icell, uint orow, vec2 ti, float inv_l, vec2 acc[D]) {
  float proj = 0.0, vv = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    acc[k] = rfa_cmul(acc[k] * inv_l, rfa_cis(rfa_angle(omega[h * D + k], ti)));
    const vec2 vh = vec2(v_unit[orow + h * D + k], v_unit[orow + HD + h * D + k]);
    proj += dot(vh, acc[k]);
    vv += dot(vh, vh);
  }
  const float coef = vv > 0.0 ? proj / vv : 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    const vec2 vh = vec2(v_unit[orow + h * D + k], v_unit[orow + HD + h * D + k]);
    const vec2 T = acc[k] - coef * vh;
    attn_out[orow + h * D + k] = T.x;
    attn_out[orow + HD + h * D + k] = T.y;
  }
}

#include "pair_attention_walk.glsl"
