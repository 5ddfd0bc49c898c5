// The probe's main() for the mechanisms with pair terms of their own, AFA and RT-RFA
// (common/afa_probe_body.glsl, rt_probe_body.glsl): exact attention weights for a rectangle of one
// (batch row, head), from the caches and the row statistics m, l the fused kernel left, with the
// kernel's own pair logit (the pair file's pair_cell_logit), written once.
//   Ahat_ij = exp(logit_ij - m_i) / l_i         the softmax weight (rows sum to 1); 0 for a key
//                                               whose logit is -inf (the kernel skipped it)
//   A_ij    = Ahat_ij decay_ij                  the pair's decay as the pair file defines it
// MODE 0: the rectangle, one thread per cell: Ahat and A [rows, cols], masked cells 0 in both.
// MODE 1: one thread per row of [r0, r1), over every key of the row, RFA's row diagnostics from
//   these weights (docs/math.md §7): entropy -sum_j Ahat log Ahat, log-partition m + log l, max
//   Ahat, expected lag sum_j A_ij |l_ij|, mass of A beyond the 4 lag thresholds: [rows, 8].
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
//
// The including body declares the spec constants D, CAUSAL and MODE, the buffers ts, Qc, Kc,
// row_max, row_sum, ahat_out, a_out, the push block `pc` (ProbePush), includes rfa_cache_ring.glsl
// and its pair file (PairRow, PAIR_HEAD_SHARED, pair_head, pair_row, pair_cell_logit; see
// common/afa_pair.glsl).
#ifndef PAIR_PROBE_WALK_GLSL
#define PAIR_PROBE_WALK_GLSL

#ifndef NEG_INF
#define NEG_INF uintBitsToFloat(0xff800000u)
#endif

// The weight Ahat, the decayed weight A, the lag |l| and the logit of pair (i, j) of a live row
// whose query is q, against the row statistics m, l.
vec4 pair_weight(const vec2 q[D], PairRow r, uint base, uint tbase, uint i, uint j, float m, float l) {
  const uint jc = base + slot_of(j);
  const float lag = pair_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]);
  float decay;
  const float logit = pair_cell_logit(q, r, jc, lag, decay);
  const float ahat = l > 0.0 && logit != NEG_INF ? exp(logit - m) / l : 0.0;
  return vec4(ahat, ahat * decay, lag, logit);
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const uint HD = pc.heads * D;
  // Every invocation of the dispatch probes head pc.h: its parameters once per workgroup.
  pair_head(pc.h, HD, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
#if PAIR_HEAD_SHARED
  barrier();
#endif
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
  if (MODE == 0) {
    if (gid >= rows * cols) return;
    const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    vec4 w = vec4(0.0);
    if (!masked) {
      const uint ic = base + slot_of(i);
      vec2 q[D];
      const PairRow r = pair_row(pc.h, HD, ic, true, q);
      w = pair_weight(q, r, base, tbase, i, j, row_max[ic], row_sum[ic]);
    }
    ahat_out[gid] = w.x;
    a_out[gid] = w.y;
  } else {
    if (gid >= rows) return;
    const uint i = pc.r0 + gid;
    const uint ic = base + slot_of(i);
    const float m = row_max[ic], l = row_sum[ic];
    const float log_l = log(l);
    vec2 q[D];
    const PairRow r = pair_row(pc.h, HD, ic, true, q);
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    float ent = 0.0, mx = 0.0, el = 0.0;
    vec4 beyond = vec4(0.0);
    const vec4 thr = vec4(pc.thr[0], pc.thr[1], pc.thr[2], pc.thr[3]);
    const bool any = kend > 0 && l > 0.0;
    // Without any weight (no keys, or l = 0) every Ahat is 0 and the sums stay 0.
    for (uint j = kbeg; any && j < kend; ++j) {
      const vec4 w = pair_weight(q, r, base, tbase, i, j, m, l);
      if (w.x > 0.0) ent -= w.x * (w.w - m - log_l);  // log Ahat, without the rounding of exp and log
      mx = max(mx, w.x);
      el += w.y * w.z;
      beyond += mix(vec4(0.0), vec4(w.y), greaterThan(vec4(w.z), thr));
    }
    ahat_out[gid * 8 + 0] = ent;
    ahat_out[gid * 8 + 1] = any ? m + log_l : NEG_INF;
    ahat_out[gid * 8 + 2] = mx;
    ahat_out[gid * 8 + 3] = el;
    for (uint k = 0; k < 4; ++k) ahat_out[gid * 8 + 4 + k] = beyond[k];
  }
}

#endif
