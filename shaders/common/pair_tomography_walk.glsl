// The attention tomography's main() for the mechanisms with pair terms of their own, AFA and RT-RFA
// (common/afa_tomography_body.glsl, rt_tomography_body.glsl), written once: the per-pair work of the
// diagnostics recomputed from the caches like the probe (common/pair_probe_walk.glsl), with the
// kernel's own pair logit scaled by a temperature alpha.
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
//   every key the row attends to: the row statistics of common/tomography_state.glsl, with
//   s_ij = pair_cross(q_i, k_j) / |q_i|; a key the pair file leaves out (pair_counts false: RT-RFA's
//   keys without direction) is left out of every statistic, as the fused kernel leaves it out of
//   the softmax.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i
//   (times the pair's decay when `decayed`: the probe's A), 0 where masked, from the MODE 0 rows of
//   the same alpha.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
//
// The including body declares the spec constants D, CAUSAL and MODE, the buffers ts, Qc, Kc,
// rows_out, p_out, the push block `pc` (TomographyPush), includes rfa_cache_ring.glsl, its pair
// file (PairRow, PAIR_HEAD_SHARED, pair_head, pair_row, pair_cell_logit, pair_cross, pair_counts;
// see common/afa_pair.glsl) and tomography_state.glsl.
#ifndef PAIR_TOMOGRAPHY_WALK_GLSL
#define PAIR_TOMOGRAPHY_WALK_GLSL

void main() {
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  const uint HD = pc.heads * D;
  pair_head(pc.h, HD, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
#if PAIR_HEAD_SHARED
  barrier();
#endif
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
  if (MODE == 0) {
    const uint lid = gl_LocalInvocationID.x;
    const uint r = pc.row_base + gl_WorkGroupID.x;  // < rows: one group per row
    const uint i = pc.r0 + r;
    const uint ic = base + slot_of(i);
    const vec2 ti = ts[tbase + slot_of(i)];
    vec2 q[D];
    const PairRow row = pair_row(pc.h, HD, ic, true, q);
    const float qabs = sqrt(pair_q_norm2(row));
    const float inv_q = qabs > 0.0 ? 1.0 / qabs : 0.0;
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    State st = tomo_empty();
    for (uint j = kbeg + lid; j < kend; j += 64) {
      const uint jc = base + slot_of(j);
      const float lag = pair_lag(ti, ts[tbase + slot_of(j)]);
      float decay;
      const float logit = pair_cell_logit(q, row, jc, lag, decay);
      if (!pair_counts(logit)) continue;
      tomo_add(st, logit, pair_cross(q, jc) * inv_q, lag, pc.alpha);
    }
    tomo_finish(st, lid, r, qabs);
  } else {
    const uint gid = gl_GlobalInvocationID.x;
    if (gid >= rows * cols) return;
    const uint r = gid / cols;
    const uint i = pc.r0 + r, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    float v = 0.0;
    const float m = rows_out[r * ROW_STRIDE + 0], l = rows_out[r * ROW_STRIDE + 1];
    if (!masked && l > 0.0) {
      const uint ic = base + slot_of(i);
      vec2 q[D];
      const PairRow row = pair_row(pc.h, HD, ic, true, q);
      float decay;
      const float logit =
          pair_cell_logit(q, row, base + slot_of(j), pair_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]), decay);
      if (pair_counts(logit)) {
        v = exp(pc.alpha * logit - m) / l;
        if (pc.decayed != 0) v *= decay;
      }
    }
    p_out[gid] = v;
  }
}

#endif
