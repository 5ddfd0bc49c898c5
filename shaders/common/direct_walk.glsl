// The walk over keys shared by the AFA and RT-RFA kernels (common/afa_attention_body.glsl,
// common/rt_attention_body.glsl): key tiles staged in shared memory (or read from the cache on
// CPU devices, DIRECT_KV), a per-key online softmax, and the merge of the S threads that split a
// row's keys (decode steps). Each kernel keeps its own pair logit and value weight.
// The includer declares the spec constants WG, S, BK, D, DIRECT_KV, KV_TILE, DC, RED, the Kc, Vc
// and ts buffers, and includes rfa_cache_ring.glsl; NEG_INF is -inf.
#ifndef RFA_DIRECT_WALK_GLSL
#define RFA_DIRECT_WALK_GLSL

shared vec2 sk[KV_TILE];
shared vec2 sv[KV_TILE];
shared vec2 st[BK];
shared float sm[WG];
shared float sl[WG];
shared vec2 sred[RED];

// Stages keys [j0, j0 + nk) of the (batch row, head) at cache cell `base` into the shared tile:
// K, V and their (hi, lo) times. The caller adds its own per-key data, then barrier().
void stage_key_tile(uint j0, uint nk, uint base, uint tbase, uint tid) {
  for (uint e = tid; e < nk * D; e += WG) {
    const uint ks = slot_of(j0 + e / D);
    sk[e] = KV_LOAD(Kc[(base + ks) * D + e % D]);
    sv[e] = KV_LOAD(Vc[(base + ks) * D + e % D]);
  }
  for (uint e = tid; e < nk; e += WG) st[e] = ts[tbase + slot_of(j0 + e)];
}

// Key `jj` of the tile (ring slot ks): its V component k and its time.
vec2 walk_value(uint base, uint ks, uint jj, uint k) { return DIRECT_KV ? KV_LOAD(Vc[(base + ks) * D + k]) : sv[jj * D + k]; }
vec2 walk_time(uint tbase, uint ks, uint jj) { return DIRECT_KV ? ts[tbase + ks] : st[jj]; }

// One key into the online softmax: rescales (m, l, acc) when the logit is a new maximum and
// returns the key's weight exp(logit - m), already added to l.
float online_softmax_add(float logit, inout float m, inout float l, inout vec2 acc[D]) {
  if (logit > m) {
    const float sc = exp(m - logit);  // 0 on the row's first key (m = -inf)
    l *= sc;
    [[unroll]] for (uint k = 0; k < D; ++k) acc[k] *= sc;
    m = logit;
  }
  const float p = exp(logit - m);
  l += p;
  return p;
}

// Merges the S partial states of each row (threads tid = rloc * S + sidx); the row's first
// thread (sidx = 0, the only one to run the epilogue) gets the merged acc. Every thread calls it.
void merge_row_splits(uint tid, uint rloc, uint sidx, inout float m, inout float l, inout vec2 acc[D]) {
  sm[tid] = m;
  barrier();
  float mrow = NEG_INF;
  for (uint s = 0; s < S; ++s) mrow = max(mrow, sm[rloc * S + s]);
  const float f = m == NEG_INF ? 0.0 : exp(m - mrow);
  sl[tid] = l * f;
  barrier();
  float lrow = 0.0;
  for (uint s = 0; s < S; ++s) lrow += sl[rloc * S + s];
  // DC components a round.
  [[unroll]] for (uint c0 = 0; c0 < D; c0 += DC) {
    [[unroll]] for (uint c = 0; c < DC; ++c) sred[tid * DC + c] = acc[c0 + c] * f;
    barrier();
    if (sidx == 0)
      [[unroll]] for (uint c = 0; c < DC; ++c) {
        vec2 sum = vec2(0.0);
        for (uint s = 0; s < S; ++s) sum += sred[(rloc * S + s) * DC + c];
        acc[c0 + c] = sum;
      }
    barrier();
  }
  m = mrow;
  l = lrow;
}

#endif
