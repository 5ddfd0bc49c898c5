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
// Epilogue: Zbar_k = num_k / den_k, then afa_finish_channel (common/afa_attention_io.glsl: the mix,
// the tied iterations' hand-over, or the counter-rotation and the prediction). The row statistics
// the readouts read: den_k (den_out), m = 0 and l = exp((1/D) sum_k log den_k).
//
// Threads, tiles and the merge of a row's split keys: the walk shared with AFA and RT-RFA
// (common/pair_attention_walk.glsl) with PAIR_SUMS, the den_k its per-channel sums.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "afa_attention_io.glsl"
layout(std430, binding = 13) writeonly buffer Db { float den_out[]; };  // den_k [cells * D]
#include "afa_full_pair.glsl"

// What a row keeps while it walks (common/pair_attention_walk.glsl): the head's (nu, alpha^2, b, eps).
struct PairRow {
  vec4 hv;
};
#define PAIR_HEAD_SHARED 1
#define PAIR_SUMS 1

void pair_head(uint h, uint HD, uint tid, uint n) { afa_load_head(h, HD, tid, n); }

PairRow pair_row(uint h, uint HD, uint icell, bool live, out vec2 q[D]) {
  afa_load_query(icell, live, q);
  return PairRow(afa[kAfaBlocks * HD + h]);
}

void pair_stage(uint j0, uint nk, uint base, uint tid) {}

// One key: its W and precisions, into the row's numerators (acc) and normalisers (sums); l adds up W
// (a row with keys has l > 0) and m stays 0.
void pair_visit(const vec2 q[D], PairRow r, uint base, uint ks, uint jj, float lag, inout float m, inout float l,
                inout vec2 acc[D], inout float sums[D]) {
  float ek[D], pk[D];
  const float W = afa_full_pair(q, DIRECT_KV ? base + ks : jj, lag, r.hv, ek, pk);
  m = 0.0;
  l += W;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    const float wp = W * pk[k];
    sums[k] += wp;
    acc[k] += (wp * ek[k]) * walk_value(base, ks, jj, k);
  }
}

// Epilogue: each channel's own normalisation, then its mix, hand-over or output; the row statistics
// of the readouts (docs/variant-afa-full.md §2, decision 5).
void pair_epilogue(PairRow r, uint h, uint HD, uint icell, uint orow, vec2 ti, float inv_l, vec2 acc[D],
                   float sums[D]) {
  float mean_log_den = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    afa_finish_channel(h, HD, icell, orow, ti, k, sums[k] > 0.0 ? acc[k] / sums[k] : vec2(0.0));
    den_out[icell * D + k] = sums[k];
    mean_log_den += log(sums[k]);
  }
  row_max[icell] = 0.0;
  row_sum[icell] = exp(mean_log_den / float(D));
}

#include "pair_attention_walk.glsl"
