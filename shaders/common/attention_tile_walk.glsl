// The walk over key tiles of the cooperative tile (common/attention_tile.glsl describes the phases):
// statements of main() in common/attention_body.glsl, which has declared tid, q0, pos0, kv_len,
// base, tbase, h, P and the row state m, l (me, le), acc[D] of thread tid < BQ.
{
  const TileSpan walk = begin_tile_walk(tid, q0, pos0, kv_len, base, tbase);
  const uint kv_begin = walk.kv_begin, kv_end = walk.kv_end;
  const int ri0 = walk.ri0, ri1 = walk.ri1;

#if RFA_TILE_CM && RFA_ROW_SG == 0
#error "the cooperative-matrix tile takes the row statistics by subgroup operations (RFA_ROW_SG)"
#endif
  // The thread's place: row group tr (rows tr + NR a), lane tc (keys tc + S b, dims tc + S e).
  // RFA_ROW_SG numbers the threads by subgroup lanes, so that the S lanes of a row group are
  // consecutive lanes of one subgroup, one cluster of subgroupClustered*(x, S): the host runs it
  // only where the workgroup is whole subgroups of at least S lanes (choose_attention_tiling).
#if RFA_ROW_SG
  const uint tw = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  const uint tw = tid;
#endif
  const uint tr = tw / S, tc = tw % S;
#if RFA_TILE_CM
  // This subgroup's row block and its Q fragments, once the Q tile is staged.
  const uint q_mi = gl_SubgroupID % MB;
  CM_Q_DECL()
  barrier();
  [[unroll]] for (uint kk = 0; kk < D2 / CMB; ++kk) CM_Q_LOAD(kk, q_mi * CMB * HS + kk * CMB)
#endif

  vec2 acc_t[TR * TD];
  [[unroll]] for (uint k = 0; k < TR * TD; ++k) acc_t[k] = vec2(0.0);
#if RFA_TILE_CM
  KV_T kpre[KPT], vpre[KPT];  // the next tile's K and V words (PREFETCH)
#else
  // Q_REGS: the thread's TR rows of the Q tile in registers for the whole walk (phase A reads them
  // D times a tile, each serving TC keys). One barrier more, once: the tile staged by all threads.
  TILE_T qreg[Q_REGS ? TR * D : 1];
  if (Q_REGS) {
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint d = 0; d < D; ++d) qreg[a * D + d] = tq[(tr + NR * a) * DP + d];
  }
#endif
  // Per row of the thread: the row's maximum (base 2; the same in the S lanes of its group) and
  // this lane's share of the row sum relative to it; the gate's energy log-sum-exp over this
  // lane's keys alone (merged across the lanes after the last tile).
  float mr[TR], lt[TR];
  [[unroll]] for (uint a = 0; a < TR; ++a) {
    mr[a] = NEG_INF;
    lt[a] = 0.0;
  }
#if !RFA_SDPA
  float met[TR], let[TR];
  [[unroll]] for (uint a = 0; a < TR; ++a) {
    met[a] = NEG_INF;
    let[a] = 0.0;
  }
#endif

  // Three barriers a tile: K and V staged together; the weights p E written; phase D done (a
  // fourth where V is staged over K: after the weights, once phase A has read K). The
  // cooperative-matrix tile: four (K staged; the cross terms stored, after which V goes over K
  // while the pair terms run; the weights written; the P V blocks stored).
  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
#if RFA_TILE_CM
    const bool first = j0 == kv_begin;  // (later tiles' K and V were prefetched into registers)
    if (PREFETCH && !first) {
      [[unroll]] for (uint q = 0; q < KPT; ++q) {
        const uint e = tid + q * WG;
        if (e < nk * D) stage_kv_half2((e / D) * HS + 2 * (e % D), kpre[q]);
      }
    } else {
      for (uint e = tid; e < nk * D; e += WG)  // K as (re, im) halves: the MMA's rows
        stage_kv_half2((e / D) * HS + 2 * (e % D), Kc[(base + slot_of(j0 + e / D)) * D + e % D]);
    }
#else
    for (uint e = tid; e < nk * D; e += WG) {
      const uint g = (base + slot_of(j0 + e / D)) * D + e % D, o = (e / D) * DP + e % D;
      tkv[o] = TILE_T(KV_LOAD(Kc[g]));
      if (KV_APART) tkv[VO + o] = TILE_T(KV_LOAD(Vc[g]));
    }
#endif
#if !RFA_SDPA
    stage_tile_keys(tid, base, tbase, j0, nk);
    stage_lag_window(tid, h, ri0, ri1, tbase, j0, nk);
#endif
    barrier();

    // A. Cross terms, TR x TC per thread, kept in registers (keys past nk: values B masks).
    float s[TR * TC];
#if RFA_TILE_CM
    // On the matrices: CMB x CMB blocks of Qh Kh^T (K rows read as columns) into tmat, then each
    // thread its own pairs'. V over K once every block is stored; rows past nk zero (the P V
    // product reads all BK rows: their weights are zero, and 0 x NaN is not).
    for (uint ni = gl_SubgroupID / MB; ni < BK / CMB; ni += gl_NumSubgroups / MB) {
      CM_ZERO();
      [[unroll]] for (uint kk = 0; kk < D2 / CMB; ++kk)
        CM_MMA_Q(kk, q_mi * CMB * HS + kk * CMB, tkv, ni * CMB * HS + kk * CMB, HS, true);
      CM_STORE(tmat, q_mi * CMB * CS + ni * CMB, CS);
    }
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) s[a * TC + b2] = tmat[(tr + NR * a) * CS + tc + S * b2];
    const KV_T zero_word = KV_T(0);
    if (PREFETCH && !first) {
      [[unroll]] for (uint q = 0; q < KPT; ++q) {
        const uint e = tid + q * WG;
        if (e < BK * D) stage_kv_half2((e / D) * HS + 2 * (e % D), e / D < nk ? vpre[q] : zero_word);
      }
    } else {
      for (uint e = tid; e < BK * D; e += WG)
        stage_kv_half2((e / D) * HS + 2 * (e % D), e / D < nk ? Vc[(base + slot_of(j0 + e / D)) * D + e % D] : zero_word);
    }
    // The next tile's K and V words, in flight while this tile's pair terms, softmax and P V run.
    if (PREFETCH && j0 + BK < kv_end) prefetch_kv(tid, base, j0 + BK, kv_end, kpre, vpre);
#else
    [[unroll]] for (uint k = 0; k < TR * TC; ++k) s[k] = 0.0;
#define TILE_Q(a, d) (Q_REGS ? qreg[(a) * D + (d)] : tq[(tr + NR * (a)) * DP + (d)])
#if RFA_TILE_F16
    // fp16 products summed in fp16 over F16C dims, then converted once (F16C = 1: every product).
    [[unroll]] for (uint d0 = 0; d0 < D; d0 += F16C) {
      float16_t hsum[TR * TC];
      [[unroll]] for (uint k = 0; k < TR * TC; ++k) hsum[k] = float16_t(0.0);
      [[unroll]] for (uint d1 = 0; d1 < F16C; ++d1) {
        const uint d = d0 + d1;
        if (d >= D) break;  // (D not a multiple of F16C: the last chunk is partial)
        TILE_T kk[TC];
        [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) kk[b2] = tkv[(tc + S * b2) * DP + d];
        [[unroll]] for (uint a = 0; a < TR; ++a) {
          const TILE_T qq = TILE_Q(a, d);
          [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) hsum[a * TC + b2] += dot(qq, kk[b2]);
        }
      }
      [[unroll]] for (uint k = 0; k < TR * TC; ++k) s[k] += float(hsum[k]);
    }
#else
    [[unroll]] for (uint d = 0; d < D; ++d) {
      TILE_T kk[TC];
      [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) kk[b2] = tkv[(tc + S * b2) * DP + d];
      [[unroll]] for (uint a = 0; a < TR; ++a) {
        const TILE_T qq = TILE_Q(a, d);
        [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) s[a * TC + b2] = cross_add(s[a * TC + b2], qq, kk[b2]);
      }
    }
#endif
#undef TILE_Q
#endif

    // B. The pair terms and the mask of the thread's own pairs, the logits over the cross terms.
    const bool interior = tile_interior(q0, pos0, j0, nk);
    float tmax[TR];  // the thread's maximum logit per row
#if !RFA_SDPA
    float ew[TR * TC], en[TR * TC];  // E and the gate's energy per pair
#endif
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint r = tr + NR * a;
      tmax[a] = NEG_INF;
      [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) {
        const uint c = tc + S * b2, k = a * TC + b2;
        const bool valid = interior || tile_visible(q0, pos0, j0, nk, r, c);
        float logit = NEG_INF;
#if RFA_SDPA
        if (valid) logit = s[k];
#else
        float E = 0.0, energy = NEG_INF;
        if (valid) logit = tile_pair_logit(P, h, r, c, s[k], E, energy);
        ew[k] = E;
        en[k] = energy;
#endif
        s[k] = logit;
        tmax[a] = max(tmax[a], logit);
      }
    }
#if !RFA_SDPA
    if (GATE)  // this lane's own energy log-sum-exp (no exchange per tile)
      [[unroll]] for (uint a = 0; a < TR; ++a) {
        float emax = NEG_INF;
        [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) emax = max(emax, en[a * TC + b2]);
        if (emax != NEG_INF) {
          const float mne = max(met[a], emax);
          let[a] *= exp(met[a] - mne);
          met[a] = mne;
          [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) let[a] += exp(en[a * TC + b2] - mne);
        }
      }
#define PAIR_E(k) ew[k]
#else
#define PAIR_E(k) 1.0
#endif

    // C. Online softmax in the same layout; p E (the decayed weight; SDPA: E = 1) to shared memory.
    float scl[TR];  // each row's rescale factor of the accumulators
#if RFA_ROW_SG
    // The row's maximum over its S lanes (one cluster), then every lane its own keys' p.
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint r = tr + NR * a;
      const float mn = max(mr[a], row_group_max(tmax[a]));
      scl[a] = mn == NEG_INF ? 1.0 : exp2(mr[a] - mn);  // logits and m in base 2
      mr[a] = mn;
      lt[a] *= scl[a];
      [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) {
        const uint k = a * TC + b2;
        const float p = mn == NEG_INF ? 0.0 : exp2(s[k] - mn);
        lt[a] += p;
        T_WEIGHT(r, tc + S * b2) = TILE_P(p * PAIR_E(k));
      }
    }
    barrier();
#else
    // Each lane against its own maximum M (at least the row's so far); the S maxima through tmx,
    // merged after the barrier into the row's, with a factor per lane for phase D.
    float lm[TR], ls[TR];
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint r = tr + NR * a;
      const float M = max(mr[a], tmax[a]);
      lm[a] = M;
      tmx[r * S + tc] = M;
      float sum = 0.0;
      [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) {
        const uint k = a * TC + b2;
        const float p = M == NEG_INF ? 0.0 : exp2(s[k] - M);
        sum += p;
        tp[r * BKP + tc + S * b2] = p * PAIR_E(k);
      }
      ls[a] = sum;
    }
    barrier();
    float f[TR * S];  // lane u's weights of row a times f[a S + u]: relative to the row's maximum
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint r = tr + NR * a;
      float mn = NEG_INF;
      [[unroll]] for (uint u = 0; u < S; ++u) mn = max(mn, tmx[r * S + u]);
      [[unroll]] for (uint u = 0; u < S; ++u) {
        const float Mu = tmx[r * S + u];
        f[a * S + u] = Mu == NEG_INF ? 0.0 : exp2(Mu - mn);
      }
      scl[a] = mn == NEG_INF ? 1.0 : exp2(mr[a] - mn);
      lt[a] = lt[a] * scl[a] + (lm[a] == NEG_INF ? 0.0 : ls[a] * exp2(lm[a] - mn));
      mr[a] = mn;
    }
#endif
#undef PAIR_E
#if !RFA_TILE_CM  // (the matrices' V went over K after their cross terms were stored)
    if (!KV_APART) {  // V over K: every thread's phase A is done (the barrier above)
      for (uint e = tid; e < nk * D; e += WG)
        tkv[(e / D) * DP + e % D] = TILE_T(KV_LOAD(Vc[(base + slot_of(j0 + e / D)) * D + e % D]));
      barrier();
    }
#endif

    // D. Value aggregation, TR rows x TD dims per thread.
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint e = 0; e < TD; ++e) acc_t[a * TD + e] *= scl[a];
#if RFA_TILE_CM
    // On the matrices: CMB x CMB blocks of (p E)h (BQ x BK) Vh (BK x 2D) into tmat (the cross terms
    // are read), each thread adding its own rows and dims. No barrier after: the next tile's
    // staging writes none of tmat, tp16 or tkv's readers' data before its own barrier.
    for (uint t = gl_SubgroupID; t < (BQ / CMB) * (D2 / CMB); t += gl_NumSubgroups) {
      const uint mi = t / (D2 / CMB), ni = t % (D2 / CMB);
      CM_ZERO();
      for (uint kk = 0; kk < BK / CMB; ++kk)
        CM_MMA(tp16, mi * CMB * PS + kk * CMB, PS, false, tkv, kk * CMB * HS + ni * CMB, HS, false);
      CM_STORE(tmat, mi * CMB * VS + ni * CMB, VS);
    }
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint e = 0; e < TD; ++e) {
        const uint o = (tr + NR * a) * VS + 2 * (tc + S * e);
        acc_t[a * TD + e] += PE_UNSCALE * vec2(tmat[o], tmat[o + 1]);  // the weights were PE_SCALE p E
      }
#elif RFA_ROW_SG
    for (uint c = 0; c < nk; ++c) {
      TILE_T vv[TD];
      [[unroll]] for (uint e = 0; e < TD; ++e) vv[e] = tkv[VO + c * DP + tc + S * e];
      [[unroll]] for (uint a = 0; a < TR; ++a) {
        const float p = tp[(tr + NR * a) * BKP + c];
        [[unroll]] for (uint e = 0; e < TD; ++e) acc_t[a * TD + e] += TILE_WEIGHTED(p, vv[e]);
      }
    }
#else
    for (uint c0 = 0; c0 < nk; c0 += S)
      [[unroll]] for (uint u = 0; u < S; ++u) {  // key c0 + u: lane u's
        const uint c = c0 + u;
        if (c < nk) {
          TILE_T vv[TD];
          [[unroll]] for (uint e = 0; e < TD; ++e) vv[e] = tkv[VO + c * DP + tc + S * e];
          [[unroll]] for (uint a = 0; a < TR; ++a) {
            const float p = tp[(tr + NR * a) * BKP + c] * f[a * S + u];
            [[unroll]] for (uint e = 0; e < TD; ++e) acc_t[a * TD + e] += TILE_WEIGHTED(p, vv[e]);
          }
        }
      }
#endif
#if !RFA_TILE_CM
    barrier();
#endif
  }
#if RFA_TILE_CM
  barrier();  // every thread's last P V read from tmat, before the hand-over writes it
#endif

  // The row statistics over the S lanes of each row group, once: the sum's shares (relative to
  // the common maximum) added; the gate's per-lane log-sum-exp states merged.
#if RFA_ROW_SG
  [[unroll]] for (uint a = 0; a < TR; ++a) {
    lt[a] = row_group_add(lt[a]);
#if !RFA_SDPA
    if (GATE) {
      const float mm = row_group_max(met[a]);
      let[a] = row_group_add(met[a] == NEG_INF ? 0.0 : let[a] * exp(met[a] - mm));
      met[a] = mm;
    }
#endif
  }
#else
  [[unroll]] for (uint a = 0; a < TR; ++a) tmx[(tr + NR * a) * S + tc] = lt[a];
  barrier();
  [[unroll]] for (uint a = 0; a < TR; ++a) {
    float sum = 0.0;
    [[unroll]] for (uint u = 0; u < S; ++u) sum += tmx[(tr + NR * a) * S + u];
    lt[a] = sum;
  }
#if !RFA_SDPA
  if (GATE) {
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a) tmx[(tr + NR * a) * S + tc] = met[a];
    barrier();
    float mm[TR];
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      mm[a] = NEG_INF;
      [[unroll]] for (uint u = 0; u < S; ++u) mm[a] = max(mm[a], tmx[(tr + NR * a) * S + u]);
    }
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a)
      tmx[(tr + NR * a) * S + tc] = met[a] == NEG_INF ? 0.0 : let[a] * exp(met[a] - mm[a]);
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      float sum = 0.0;
      [[unroll]] for (uint u = 0; u < S; ++u) sum += tmx[(tr + NR * a) * S + u];
      let[a] = sum;
      met[a] = mm[a];
    }
  }
#endif
#endif

  // Hand the row statistics, then the accumulators (OUT_CHUNK dims a round), to the row threads
  // through TILE_OUT (tp; the cooperative-matrix tile's tmat, all dims in one round). Every thread reads (those past BQ the last row, unused): an unconditional write
  // lets the compiler drop acc[]'s initial zeros instead of keeping them live through the walk.
  if (tc == 0)
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint o = (tr + NR * a) * OUT_ROW;
      TILE_OUT[o] = mr[a];
      TILE_OUT[o + 1] = lt[a];
#if !RFA_SDPA
      TILE_OUT[o + 2] = met[a];
      TILE_OUT[o + 3] = let[a];
#endif
    }
  barrier();
#if RFA_SDPA
  read_row_stats(tid, m, l);
#else
  read_row_stats(tid, m, l, me, le);
#endif
  [[unroll]] for (uint c0 = 0; c0 < D; c0 += OUT_CHUNK) {
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint e = 0; e < TD; ++e) {
        const uint d = tc + S * e;
        if (d >= c0 && d < c0 + OUT_CHUNK) {
          const uint o = (tr + NR * a) * 2 * OUT_CHUNK + 2 * (d - c0);
          TILE_OUT[o] = acc_t[a * TD + e].x;
          TILE_OUT[o + 1] = acc_t[a * TD + e].y;
        }
      }
    barrier();
    // The last round may be partial (D not a multiple of OUT_CHUNK, e.g. D = 40 with BK = 32).
    [[unroll]] for (uint k = 0; k < OUT_CHUNK; ++k)
      if (c0 + k < D) {
        const uint o = min(tid, BQ - 1) * 2 * OUT_CHUNK + 2 * k;
        acc[c0 + k] = vec2(TILE_OUT[o], TILE_OUT[o + 1]);
      }
  }
}
