// The walk over key tiles of the cooperative tile (common/attention_tile.glsl describes the phases):
// statements of main() in common/attention_body.glsl, which has declared tid, q0, pos0, kv_len,
// base, tbase, h, P and the row state m, l (me, le), acc[D] of thread tid < BQ.
{
  const uint tr = tid / S, tc = tid % S;
  const uint last_q = min(q0 + BQ, pc.n_new) - 1;
  const uint kv_end = CAUSAL ? min(kv_len, pos0 + last_q + 1) : kv_len;
  const uint kv_begin = CAUSAL ? first_key(pos0 + q0) : 0;  // the first row's oldest key

  // The Q tile and the rows' terms (rows past n_new are zero and fully masked).
  for (uint e = tid; e < BQ * D; e += WG) {
    const uint r = e / D, qr = q0 + r;
    vec2 x = qr < pc.n_new ? Qc[(base + slot_of(pos0 + qr)) * D + e % D] : vec2(0.0);
#if RFA_SDPA
    x *= pc.scale * RFA_LOG2E;  // logits in base 2 (exp2 softmax)
#endif
#if RFA_TILE_CM
    tq[r * HS + 2 * (e % D)] = float16_t(x.x);
    tq[r * HS + 2 * (e % D) + 1] = float16_t(x.y);
#else
    tq[r * DP + e % D] = TILE_T(x);
#endif
  }
#if RFA_TILE_CM
  // Halves [2D, D2) of every Q and K/V row: zero once (the staging loops never write them), so
  // the padded blocks add exactly nothing (uninitialised shared memory could hold NaN bits).
  for (uint e = tid; e < (BQ + BK) * (D2 - 2 * D); e += WG) {
    const uint r = e / (D2 - 2 * D), c = 2 * D + e % (D2 - 2 * D);
    if (r < BQ) tq[r * HS + c] = float16_t(0.0);
    else tkv[(r - BQ) * HS + c] = float16_t(0.0);
  }
#endif
#if !RFA_SDPA
  for (uint r = tid; r < BQ; r += WG) {
    const bool live = q0 + r < pc.n_new;
    const uint s = slot_of(pos0 + q0 + r);
    tqn[r] = live ? q_norm2[base + s] : 0.0;
    tqt[r] = live ? ts[tbase + s] : vec2(0.0);
    tqi[r] = integer_time(tqt[r], ROW_NO_INT);
  }
#endif

  vec2 acc_t[TR * TD];
  [[unroll]] for (uint k = 0; k < TR * TD; ++k) acc_t[k] = vec2(0.0);

  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
    for (uint e = tid; e < nk * D; e += WG) {
      const vec2 x = KV_LOAD(Kc[(base + slot_of(j0 + e / D)) * D + e % D]);
#if RFA_TILE_CM
      tkv[(e / D) * HS + 2 * (e % D)] = float16_t(x.x);
      tkv[(e / D) * HS + 2 * (e % D) + 1] = float16_t(x.y);
#else
      tkv[(e / D) * DP + e % D] = TILE_T(x);
#endif
    }
#if !RFA_SDPA
    for (uint e = tid; e < nk; e += WG) {
      const uint s = slot_of(j0 + e);
      tkn[e] = k_norm2[base + s];
      tkt[e] = ts[tbase + s];
      tki[e] = integer_time(tkt[e], KEY_NO_INT);
    }
#endif
    barrier();

    // A. Cross terms, TR x TC per thread (keys past nk give values phase B masks).
#if RFA_TILE_CM
    for (uint t = gl_SubgroupID; t < (BQ / 16) * (BK / 16); t += gl_NumSubgroups) {
      const uint mi = t / (BK / 16), ni = t % (BK / 16);
      CM_ZERO();
      for (uint kk = 0; kk < D2 / 16; ++kk)  // K^T: the K rows read as columns
        CM_MMA(tq, mi * 16 * HS + kk * 16, HS, false, tkv, ni * 16 * HS + kk * 16, HS, true);
      CM_STORE(tlog, mi * 16 * CS + ni * 16, CS);
    }
#else
    {
      float s[TR * TC];
      [[unroll]] for (uint k = 0; k < TR * TC; ++k) s[k] = 0.0;
      [[unroll]] for (uint d = 0; d < D; ++d) {
        TILE_T kk[TC];
        [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) kk[b2] = tkv[(tc + S * b2) * DP + d];
        [[unroll]] for (uint a = 0; a < TR; ++a) {
          const TILE_T qq = tq[(tr + NR * a) * DP + d];
          [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) s[a * TC + b2] += TILE_DOT(qq, kk[b2]);
        }
      }
      [[unroll]] for (uint a = 0; a < TR; ++a)
        [[unroll]] for (uint b2 = 0; b2 < TC; ++b2) T_CROSS(tr + NR * a, tc + S * b2) = s[a * TC + b2];
    }
#endif
    barrier();

    // B. The pair terms and the mask, once per pair; the V tile over the K tile. Interior tiles (a
    // full key tile, every row live, every key before the diagonal and inside every row's window)
    // skip the mask: one branch per tile, the same for all its threads.
    const bool interior = nk == BK && q0 + BQ <= pc.n_new &&
                          (!CAUSAL || (j0 + BK <= pos0 + q0 + 1 && j0 >= first_key(pos0 + q0 + BQ - 1)));
    for (uint e = tid; e < BQ * BK; e += WG) {
      const uint r = e / BK, c = e % BK;
      const uint qr = q0 + r, ii = pos0 + qr, j = j0 + c;
      const bool valid = interior || (qr < pc.n_new && c < nk && (!CAUSAL || (j <= ii && j >= first_key(ii))));
      const float cross = T_CROSS(r, c);
      float logit = NEG_INF;
#if RFA_SDPA
      if (valid) logit = cross;
      T_LOGIT(r, c) = logit;
      T_E(r, c) = 1.0;
#else
      float E = 0.0, energy = NEG_INF;
      if (valid) {
        // The table index from integer times (exact: both below 2^24), else the float lag.
        const int li = tqi[r] - tki[c];
        const uint idx = uint(CAUSAL ? li : abs(li));
        LagTerms t;
        if (idx < pc.table_lags) {
          t = table_terms(P, h, float(idx), idx);
        } else {
          const vec2 tiv = tqt[r], tj = tkt[c];
          float lag = (tiv.x - tj.x) + (tiv.y - tj.y);
          if (!CAUSAL) lag = abs(lag);
          t = pair_lag_terms(P, h, lag);
        }
        rfa_pair_logit2(P, t, tqn[r], tkn[c], cross, logit, energy);
        E = t.E;
      }
      T_LOGIT(r, c) = logit;
      T_E(r, c) = E;
      if (GATE) ten[r * BKP + c] = energy;
#endif
    }
#if RFA_TILE_CM
    // The MMA reads all BK rows: rows past nk are zero (their weights are zero; 0 x NaN is not).
    for (uint e = tid; e < BK * D; e += WG) {
      const vec2 x = e / D < nk ? KV_LOAD(Vc[(base + slot_of(j0 + e / D)) * D + e % D]) : vec2(0.0);
      tkv[(e / D) * HS + 2 * (e % D)] = float16_t(x.x);
      tkv[(e / D) * HS + 2 * (e % D) + 1] = float16_t(x.y);
    }
#else
    for (uint e = tid; e < nk * D; e += WG)
      tkv[(e / D) * DP + e % D] = TILE_T(KV_LOAD(Vc[(base + slot_of(j0 + e / D)) * D + e % D]));
#endif
    barrier();

    // C. Online softmax, one thread per row: rescale factor, then p E over the logit.
    if (tid < BQ) {
      const uint r = tid;
      float tmax = NEG_INF;
      for (uint c = 0; c < nk; ++c) tmax = max(tmax, T_LOGIT(r, c));
      float sc = 1.0;
      if (tmax != NEG_INF) {
        const float mn = max(m, tmax);
        sc = exp2(m - mn);  // logits and m in base 2
        m = mn;
        l *= sc;
#if !RFA_SDPA
        float emax = NEG_INF;
        if (GATE) {
          for (uint c = 0; c < nk; ++c) emax = max(emax, ten[r * BKP + c]);
          const float mne = max(me, emax);
          le *= exp(me - mne);
          me = mne;
        }
#endif
        for (uint c = 0; c < nk; ++c) {
          const float p = exp2(T_LOGIT(r, c) - m);
          l += p;
          T_LOGIT(r, c) = p * T_E(r, c);  // decayed attention A = Ahat E (SDPA: E = 1)
#if !RFA_SDPA
          if (GATE) le += exp(ten[r * BKP + c] - me);
#endif
        }
      } else {
        for (uint c = 0; c < nk; ++c) T_LOGIT(r, c) = 0.0;  // no key of this tile is visible
      }
#if RFA_TILE_CM
      for (uint c = 0; c < BK; ++c) tp16[r * PS + c] = float16_t(c < nk ? T_LOGIT(r, c) : 0.0);
#endif
      tscale[r] = sc;
    }
    barrier();

    // D. Value aggregation, TR rows x TD dims per thread.
#if RFA_TILE_CM
    for (uint t = gl_SubgroupID; t < (BQ / 16) * (D2 / 16); t += gl_NumSubgroups) {
      const uint mi = t / (D2 / 16), ni = t % (D2 / 16);
      CM_ZERO();
      for (uint kk = 0; kk < BK / 16; ++kk)
        CM_MMA(tp16, mi * 16 * PS + kk * 16, PS, false, tkv, kk * 16 * HS + ni * 16, HS, false);
      CM_STORE(tpv, mi * 16 * VS + ni * 16, VS);
    }
    barrier();
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const uint r = tr + NR * a;
      const float sc = tscale[r];
      [[unroll]] for (uint e = 0; e < TD; ++e) {
        const uint d = tc + S * e;
        acc_t[a * TD + e] = acc_t[a * TD + e] * sc + vec2(tpv[r * VS + 2 * d], tpv[r * VS + 2 * d + 1]);
      }
    }
#else
    [[unroll]] for (uint a = 0; a < TR; ++a) {
      const float sc = tscale[tr + NR * a];
      [[unroll]] for (uint e = 0; e < TD; ++e) acc_t[a * TD + e] *= sc;
    }
    for (uint c = 0; c < nk; ++c) {
      TILE_T vv[TD];
      [[unroll]] for (uint e = 0; e < TD; ++e) vv[e] = tkv[c * DP + tc + S * e];
      [[unroll]] for (uint a = 0; a < TR; ++a) {
        const float p = tpe[(tr + NR * a) * BKP + c].x;
        [[unroll]] for (uint e = 0; e < TD; ++e) acc_t[a * TD + e] += TILE_WEIGHTED(p, vv[e]);
      }
    }
#endif
    barrier();
  }

  // Hand the accumulators to the row threads, OUT_CHUNK dims a round through tpe (tpv: at once).
#if RFA_TILE_CM
  [[unroll]] for (uint a = 0; a < TR; ++a)
    [[unroll]] for (uint e = 0; e < TD; ++e) {
      const uint r = tr + NR * a, d = tc + S * e;
      tpv[r * VS + 2 * d] = acc_t[a * TD + e].x;
      tpv[r * VS + 2 * d + 1] = acc_t[a * TD + e].y;
    }
  barrier();
  // Every thread reads (those past BQ a copy of the last row they never use): an unconditional write
  // lets the compiler drop acc[]'s initial zeros instead of keeping them live through the walk.
  const uint rown = min(tid, BQ - 1);
  [[unroll]] for (uint d = 0; d < D; ++d) acc[d] = vec2(tpv[rown * VS + 2 * d], tpv[rown * VS + 2 * d + 1]);
#else
  [[unroll]] for (uint c0 = 0; c0 < D; c0 += OUT_CHUNK) {
    [[unroll]] for (uint a = 0; a < TR; ++a)
      [[unroll]] for (uint e = 0; e < TD; ++e) {
        const uint d = tc + S * e;
        if (d >= c0 && d < c0 + OUT_CHUNK) tpe[(tr + NR * a) * OUT_CHUNK + d - c0] = acc_t[a * TD + e];
      }
    barrier();
    // Every thread reads (those past BQ the last row, unused): see the cooperative-matrix branch.
    // The last round may be partial (D not a multiple of OUT_CHUNK, e.g. D = 40 with BK = 32).
    [[unroll]] for (uint k = 0; k < OUT_CHUNK; ++k)
      if (c0 + k < D) acc[c0 + k] = tpe[min(tid, BQ - 1) * OUT_CHUNK + k];
    barrier();
  }
#endif
}
