// The fused kernel's main() for the mechanisms with pair terms of their own, AFA and RT-RFA
// (common/afa_attention_body.glsl, rt_attention_body.glsl): one walk over keys, written once.
//
// Threads: BQ rows per workgroup, S threads per row splitting its keys (S > 1 for decode steps),
// merged through shared memory; keys staged in shared tiles of BK (GPUs) or read from the cache
// (DIRECT_KV, CPU devices); per key, the mechanism's pair term and an online softmax
// (common/direct_walk.glsl). The row statistics m, l go to row_max, row_sum for the probe.
//
// The including body declares the spec constants WG, BQ, S, BK, D, CAUSAL, DIRECT_KV and those
// direct_walk.glsl needs, the buffers ts, Qc, Kc, Vc, row_max, row_sum and span (pos0, kv_len), the
// push block `pc` (AttentionPush), includes rfa_cache_ring.glsl, rfa_phase.glsl, direct_walk.glsl
// and its pair file (the row interface: PairRow, PAIR_HEAD_SHARED, pair_head, pair_row; see
// common/afa_pair.glsl), and defines:
//   void pair_stage(uint j0, uint nk, uint base, uint tid)
//       per-key data of its own into shared memory, beside the staged tile (before the barrier)
//   void pair_visit(const vec2 q[D], PairRow r, uint base, uint ks, uint jj, float lag,
//                   inout float m, inout float l, inout vec2 acc[D])
//       one key (ring slot ks, row jj of the tile) at lag |l| = lag into the row's online softmax
//   void pair_epilogue(PairRow r, uint h, uint HD, uint icell, uint orow, vec2 ti, float inv_l,
//                      vec2 acc[D])
//       the row's output from acc and 1 / l (0 for a row without keys), at row orow of attn_out;
//       the walk has written row_max and row_sum (m and l) before, so an epilogue may replace them
// With PAIR_SUMS 1 (full AFA, common/afa_full_attention_body.glsl) a row also keeps D real sums (its
// per-channel normalisers): pair_visit and pair_epilogue take them as a last argument (inout float
// sums[D] / float sums[D]), and a decode row's split keys add them up. Such a visit keeps m = 0 on
// a row with keys (no online softmax), so the merge adds acc unscaled too.
#ifndef PAIR_ATTENTION_WALK_GLSL
#define PAIR_ATTENTION_WALK_GLSL

#ifndef PAIR_SUMS
#define PAIR_SUMS 0
#endif
#if PAIR_SUMS
#define PAIR_SUMS_ARG , sums
#else
#define PAIR_SUMS_ARG
#endif

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

  pair_head(h, HD, tid, WG);
#if PAIR_HEAD_SHARED
  barrier();
#endif

  const vec2 ti = row_live ? ts[tbase + slot_of(i)] : vec2(0.0);
  vec2 q[D];
  const PairRow r = pair_row(h, HD, icell, row_live, q);
  float m = NEG_INF, l = 0.0;
  vec2 acc[D];
  [[unroll]] for (uint k = 0; k < D; ++k) acc[k] = vec2(0.0);
#if PAIR_SUMS
  float sums[D];
  [[unroll]] for (uint k = 0; k < D; ++k) sums[k] = 0.0;
#endif

  const uint last_q = min(q0 + BQ, pc.n_new) - 1;
  const uint kv_end = CAUSAL ? min(kv_len, pos0 + last_q + 1) : kv_len;
  const uint kv_begin = CAUSAL ? first_key(pos0 + q0) : 0;
  const uint row_first = CAUSAL ? first_key(i) : 0;

  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
    if (!DIRECT_KV) {
      stage_key_tile(j0, nk, base, tbase, tid);
      pair_stage(j0, nk, base, tid);
      barrier();
    }
    if (row_live) {
      const uint jend = CAUSAL ? (i + 1 > j0 ? min(nk, i + 1 - j0) : 0) : nk;
      const uint jbeg = row_first > j0 ? row_first - j0 : 0;
      for (uint jj = jbeg + sidx; jj < jend; jj += S) {
        const uint ks = slot_of(j0 + jj);
        pair_visit(q, r, base, ks, jj, pair_lag(ti, walk_time(tbase, ks, jj)), m, l, acc PAIR_SUMS_ARG);
      }
    }
    if (!DIRECT_KV) barrier();
  }

  if (S > 1) {  // decode steps split a row's keys
    merge_row_splits(tid, rloc, sidx, m, l, acc);
#if PAIR_SUMS
    vec2 s2[D];  // the sums, merged as complex components with a zero part and no rescaling (m = 0)
    [[unroll]] for (uint k = 0; k < D; ++k) s2[k] = vec2(sums[k], 0.0);
    float m0 = 0.0, l0 = 0.0;
    merge_row_splits(tid, rloc, sidx, m0, l0, s2);
    [[unroll]] for (uint k = 0; k < D; ++k) sums[k] = s2[k].x;
#endif
  }
  if (!row_live || sidx != 0) return;

  const bool has_keys = l > 0.0;
  const float inv_l = has_keys ? 1.0 / l : 0.0;
  const uint orow = (b * pc.n_new + qi) * 2 * HD;
  row_max[icell] = has_keys ? m : NEG_INF;
  row_sum[icell] = l;
  pair_epilogue(r, h, HD, icell, orow, ti, inv_l, acc PAIR_SUMS_ARG);
}

#endif
