// The walk over key tiles of the per-element matrix tile (RFA_TILE_PE, the *_tile_pe kernels):
// statements of main() in common/attention_body.glsl, like common/attention_tile_walk.glsl, whose
// matrix tile (RFA_TILE_CM) it replaces where the device has GL_NV_cooperative_matrix2's
// per-element operations, reductions and conversions (VK_NV_cooperative_matrix2).
//
// The matrix tile forms its cross terms on the matrices and then hands them through shared memory
// to the threads that own their pairs, their weights back to the matrices and the P V blocks back
// to the threads (docs/math.md §9): three round trips a tile (BQ x BK floats, BQ x BK halves,
// BQ x 2D floats). Here nothing leaves the matrices: subgroup g owns row
// block g (the host runs as many subgroups as row blocks) and, per tile,
//   A. its cross terms Qh Kh^T, one CMB x CMB accumulator per key block, Q resident;
//   B. the pair terms applied per element of that accumulator (coopMatPerElementNV with the
//      block's row and column: lag, E, B, P, the Student-t logit, the mask) -> the logits;
//   C. the online softmax on the matrices: the rows' maxima by coopMatReduceNV, p = exp2(logit -
//      m) per element, the row sums by reduction, the accumulators rescaled by a row-broadcast
//      factor; p E (times PE_SCALE) converted from accumulator to an A operand (fp16);
//   D. O += (p E)h Vh on the matrices, O (BQ x D2 in D2 / CMB accumulators) resident for the walk.
// Two barriers a tile with K and V in two tiles, four with V staged over K. After the last tile
// the row statistics and O go through shared memory to one thread per row, as in the other tiles.
{
  const TileSpan walk = begin_tile_walk(tid, q0, pos0, kv_len, base, tbase);
  const uint kv_begin = walk.kv_begin, kv_end = walk.kv_end;
  const int ri0 = walk.ri0, ri1 = walk.ri1;
#if !RFA_SDPA
  pe_head = P;
  pe_h = h;
#endif
  pe_q0 = q0;
  pe_pos0 = pos0;

  const uint mi = gl_SubgroupID;  // this subgroup's row block (NumSubgroups == MB: the host's shape)
  const uint rb = mi * CMB;       // its first tile row
  CM_Q_DECL()
  barrier();
  [[unroll]] for (uint kk = 0; kk < D2 / CMB; ++kk) CM_Q_LOAD(kk, rb * HS + kk * CMB)

  const uint NB = BK / CMB;  // key blocks a tile
  CM_TYPE_C o[D2 / CMB];     // the block row's unnormalised output, (re, im) halves as columns
  [[unroll]] for (uint d = 0; d < D2 / CMB; ++d) o[d] = CM_TYPE_C(0.0);
  // The rows' running maximum (base 2) and sum, each broadcast along its row of the block; the
  // gate's energy log-sum-exp likewise.
  CM_TYPE_C mrow = CM_TYPE_C(NEG_INF), lrow = CM_TYPE_C(0.0);
#if !RFA_SDPA
  CM_TYPE_C merow = CM_TYPE_C(NEG_INF), lerow = CM_TYPE_C(0.0);
#endif
  KV_T kpre[KPT], vpre[KPT];  // the next tile's K and V words (PREFETCH)
  const KV_T zero_word = KV_T(0);

  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
    const bool first = j0 == kv_begin;
    // K as (re, im) halves (rows past nk keep stale halves: their columns' logits are masked); V likewise,
    // rows past nk zero (their weights are zero, and 0 x NaN is not). With V over K, V after A.
    [[unroll]] for (uint q = 0; q < (PREFETCH ? KPT : 0); ++q) {
      const uint e = tid + q * WG;
      if (!first && e < BK * D) {
        if (e < nk * D) stage_kv_half2((e / D) * HS + 2 * (e % D), kpre[q]);
        if (KV_APART) stage_kv_half2(VO + (e / D) * HS + 2 * (e % D), e / D < nk ? vpre[q] : zero_word);
      }
    }
    if (!PREFETCH || first)
      for (uint e = tid; e < BK * D; e += WG) {
        const uint g = (base + slot_of(j0 + min(e / D, nk - 1))) * D + e % D;
        if (e < nk * D) stage_kv_half2((e / D) * HS + 2 * (e % D), Kc[g]);
        if (KV_APART) stage_kv_half2(VO + (e / D) * HS + 2 * (e % D), e / D < nk ? Vc[g] : zero_word);
      }
#if !RFA_SDPA
    stage_tile_keys(tid, base, tbase, j0, nk);
    stage_lag_window(tid, h, ri0, ri1, tbase, j0, nk);
#endif
    barrier();
    // The next tile's K and V words, in flight while this tile's matrices run (with V over K,
    // once this tile's V is staged from them).
    if (PREFETCH && KV_APART && j0 + BK < kv_end) prefetch_kv(tid, base, j0 + BK, kv_end, kpre, vpre);
    pe_j0 = j0;
    pe_nk = nk;
    pe_interior = tile_interior(q0, pos0, j0, nk);

    // A and B: each key block's cross terms, then its logits per element; the tile's row maxima.
    CM_TYPE_C lg[NB];
    CM_TYPE_C mnew = mrow;
    [[unroll]] for (uint nb = 0; nb < NB; ++nb) {
      CM_ZERO();
      [[unroll]] for (uint kk = 0; kk < D2 / CMB; ++kk)
        CM_MMA_Q(kk, rb * HS + kk * CMB, tkv, nb * CMB * HS + kk * CMB, HS, true);
      coopMatPerElementNV(lg[nb], cm, pe_logit, rb, nb * CMB);
#if !RFA_SDPA
      if (GATE) {  // the gate's energies, merged into the rows' log-sum-exp block by block
        CM_TYPE_C en, emax, f;
        coopMatPerElementNV(en, cm, pe_energy, rb, nb * CMB);
        coopMatReduceNV(emax, en, gl_CooperativeMatrixReduceRowNV, pe_combine_max);
        coopMatPerElementNV(emax, emax, pe_max, merow);
        coopMatPerElementNV(f, merow, pe_rescale, emax);
        coopMatPerElementNV(en, en, pe_exp_rel, emax);
        coopMatReduceNV(en, en, gl_CooperativeMatrixReduceRowNV, pe_combine_add);
        lerow = lerow * f + en;
        merow = emax;
      }
#endif
      CM_TYPE_C bmax;
      coopMatReduceNV(bmax, lg[nb], gl_CooperativeMatrixReduceRowNV, pe_combine_max);
      coopMatPerElementNV(mnew, mnew, pe_max, bmax);
    }
    // C. The rows' factor for what came before, the new maximum, and the accumulators rescaled.
    CM_TYPE_C scl;
    coopMatPerElementNV(scl, mrow, pe_rescale2, mnew);
    mrow = mnew;
    lrow = lrow * scl;
    [[unroll]] for (uint d = 0; d < D2 / CMB; ++d) o[d] = o[d] * scl;
    if (!KV_APART) {  // V over K: every subgroup's cross terms are formed
      barrier();
      [[unroll]] for (uint q = 0; q < (PREFETCH ? KPT : 0); ++q) {
        const uint e = tid + q * WG;
        if (!first && e < BK * D) stage_kv_half2((e / D) * HS + 2 * (e % D), e / D < nk ? vpre[q] : zero_word);
      }
      if (!PREFETCH || first)
        for (uint e = tid; e < BK * D; e += WG)
          stage_kv_half2((e / D) * HS + 2 * (e % D), e / D < nk ? Vc[(base + slot_of(j0 + e / D)) * D + e % D] : zero_word);
      barrier();
      if (PREFETCH && j0 + BK < kv_end) prefetch_kv(tid, base, j0 + BK, kv_end, kpre, vpre);
    }
    // C and D: per key block, p = exp2(logit - m) and its row sums, p E as an A operand, O += (p E) V.
    [[unroll]] for (uint nb = 0; nb < NB; ++nb) {
      CM_TYPE_C p, rs;
      coopMatPerElementNV(p, lg[nb], pe_exp2_rel, mrow);
      coopMatReduceNV(rs, p, gl_CooperativeMatrixReduceRowNV, pe_combine_add);
      lrow = lrow + rs;
      coopMatPerElementNV(p, p, pe_weight, rb, nb * CMB);
      const CM_TYPE_A pa = CM_TYPE_A(p);
      [[unroll]] for (uint d = 0; d < D2 / CMB; ++d) {
        CM_TYPE_B vb;
        coopMatLoad(vb, tkv, VO + nb * CMB * HS + d * CMB, HS, gl_CooperativeMatrixLayoutRowMajor);
        o[d] = coopMatMulAdd(pa, vb, o[d]);
      }
    }
    barrier();  // every subgroup's reads of this tile's K and V, before the next tile's staging
  }

  // Hand-over: the rows' statistics, one column of each broadcast matrix, through this subgroup's
  // own rows of tmat (columns [4, 4 + CMB) a scratch block, [0, 4) the statistics), then O.
  {
    const uint NSTAT = RFA_SDPA != 0 ? 2 : 4;  // m, l (and the gate's me, le)
    CM_TYPE_C stat[4];
    stat[0] = mrow;
    stat[1] = lrow;
#if !RFA_SDPA
    stat[2] = merow;
    stat[3] = lerow;
#endif
    [[unroll]] for (uint k = 0; k < NSTAT; ++k) {
      coopMatStore(stat[k], tmat, rb * VS + 4, VS, gl_CooperativeMatrixLayoutRowMajor);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      // Each lane its rows' column 0 of the block into column k (read before the next store).
      for (uint r = gl_SubgroupInvocationID; r < CMB; r += gl_SubgroupSize) tmat[(rb + r) * VS + k] = tmat[(rb + r) * VS + 4];
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
  }
  barrier();
#if RFA_SDPA
  read_row_stats(tid, m, l);
#else
  read_row_stats(tid, m, l, me, le);
#endif
  barrier();
  [[unroll]] for (uint d = 0; d < D2 / CMB; ++d) {
    o[d] = o[d] * PE_UNSCALE;  // the weights were PE_SCALE p E
    coopMatStore(o[d], tmat, rb * VS + d * CMB, VS, gl_CooperativeMatrixLayoutRowMajor);
  }
  barrier();
  [[unroll]] for (uint d = 0; d < D; ++d) {
    const uint o1 = min(tid, BQ - 1) * VS + 2 * d;
    acc[d] = vec2(tmat[o1], tmat[o1 + 1]);
  }
}
