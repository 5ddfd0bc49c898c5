// The cooperative tile of the fused attention kernel (RFA_TILE 1; the GPU path for prefill), built
// like the flash-attention kernels of GPU libraries: a workgroup of WG threads owns BQ query rows;
// per tile of BK keys (K and V staged together: 3 barriers a tile; 4 where V is staged over K):
//   A. logits as a small GEMM: thread (tr, tc) forms a TR x TC block of cross terms Re(conj(Q~) K~)
//      (rows tr + NR a, keys tc + S b) from the Q tile and the K tile in shared memory, so each
//      value it loads serves TC (or TR) multiply-adds instead of one; the block stays in registers;
//   B. the pair terms of exactly those pairs, by the same thread: lag, E, B, P (the lag table for
//      integer lags), the Mahalanobis residual and the Student-t logit, the causal/window mask;
//   C. the online softmax in the same layout: each thread's maximum over its TC keys, then the
//      row's over the S threads of the row group (RFA_ROW_SG: a clustered subgroup max, or
//      shuffle-xor butterflies, the group's S lanes being consecutive lanes of one subgroup; else
//      each thread rescales to its own maximum and the S maxima go through a small shared array,
//      merged after the next barrier);
//      each thread keeps its share of the row sum (and of the gate's energy log-sum-exp) in
//      registers, merged across the row group once after the last tile; only p E (RFA's decayed
//      weight) goes to shared memory;
//   D. the value aggregation as a second small GEMM: thread (tr, tc) accumulates TR rows x TD
//      complex dims (dims tc + S e) in registers.
// After the last tile the accumulators go through shared memory to one thread per row, which
// runs the kernel's epilogue unchanged. The cooperative-matrix tile (RFA_TILE_CM) runs phases A
// and D on the matrices and B and C as above: the matrices give no element's (row, column), so
// the cross terms go through shared memory to the threads that own their pairs, and the P V
// blocks back to the threads that own their rows and dims (4 barriers a tile).
//
// Shapes (specialization constants, chosen by ops::choose_attention_tiling): S threads share a row
// group (S divides D and BK: the largest power of two up to 8 dividing D), NR = WG / S row threads,
// TR = BQ / NR rows, TC = BK / S keys and TD = D / S dims per thread. Any D: every array is sized
// from these constants, and the loops over D run in whole rounds (the hand-over's last round of
// OUT_CHUNK dims may be partial). Strides are padded so that the S threads of a row group read
// different banks. With RFA_TILE_F16 the Q, K and V tiles hold fp16 and the products of phases A
// and D are fp16 (one rounding each; phase A sums F16C products in fp16 before one conversion);
// every other sum, the softmax statistics and the accumulators stay fp32 (docs/math.md §9 bounds
// the error).
#ifndef RFA_ATTENTION_TILE_GLSL
#define RFA_ATTENTION_TILE_GLSL

#ifndef RFA_TILE_F16
#define RFA_TILE_F16 0
#endif
#ifndef RFA_TILE_CM
#define RFA_TILE_CM 0
#endif
#ifndef RFA_TILE_PE
#define RFA_TILE_PE 0
#endif
#if RFA_TILE_F16
#define TILE_T f16vec2
#define TILE_WEIGHTED(p, v) vec2(float16_t(p) * (v))
#else
#define TILE_T vec2
#define TILE_WEIGHTED(p, v) ((p) * (v))
#endif

const uint NR = WG / S;    // row threads
const uint TR = BQ / NR;   // rows per thread
const uint TC = BK / S;    // keys per thread (phase A)
const uint TD = D / S;     // complex dims per thread (phase D)
const uint DP = D + 1;     // padded row strides
// p E rows: BK + 8 words (PAD) puts the row groups of a subgroup 8 banks apart, so that row group
// tr's lanes tc (stores tp[r BKP + tc + S b], S = 8) hit banks 8 tr + tc, all distinct; BK + 1
// (stride 33) gave banks tr + tc, up to 4-way conflicts.
const uint BKP = PAD ? BK + 8 : BK + 1;

#if RFA_TILE_CM
// RFA_TILE_CM: phases A and D on cooperative matrices, fp16 in, fp32 accumulate, one CMB x CMB
// output block per subgroup at a time: VK_NV_cooperative_matrix (16 x 16 x 16, the *_tile_cm
// kernels), VK_KHR_cooperative_matrix (RFA_TILE_CK: the device's square fp16 shape, 16 on GPUs, 8
// on lavapipe: the *_tile_ck kernels) or emulated (RFA_TILE_CM_EMU). The complex
// components are interleaved (re, im), so Re(conj(q) k) is a real dot product over 2D halves:
// phase A is Qh (BQ x 2D) Kh^T, phase D is (p E)h (BQ x BK) Vh (BK x 2D), its fp32 result added to
// the rescaled accumulators (acc_t, in the (tr, tc) layout of the scalar tile's phase D). The row
// max and sum are subgroup shuffles (RFA_ROW_SG 2: every device with cooperative matrices has
// them). Strides are multiples of 8 halves / 4 floats (16-byte rows).
// Any D: the 2D halves of a row are zero-padded to D2, whole CMB-wide blocks (D = 12: 24 -> 32);
// zero Q and K halves add nothing to a cross term, and the P V columns past 2D are never read.
#ifndef RFA_TILE_CK
#define RFA_TILE_CK 0
#endif
#if RFA_TILE_CK
layout(constant_id = RFA_CM_BLOCK_ID) const uint CMB = 16;  // the KHR shape's side (ops: coopmat_block)
#else
const uint CMB = 16;  // NV's 16 x 16 x 16 (and its emulation)
#endif
const uint D2 = (2 * D + CMB - 1) / CMB * CMB;
const uint HS = D2 + 8;      // the halves of a Q/K/V tile row
const uint CS = PAD ? BK + 8 : BK + 4;  // the floats of a cross-term row (8 mod 32: reads without conflicts)
const uint PS = BK + 8;      // the halves of a weight row
const uint VS = D2 + 4;      // the floats of a P V row
shared float16_t tq[BQ * HS];
#if RFA_TILE_PE
// The per-element form (RFA_TILE_PE, common/attention_tile_walk_pe.glsl): K and V in two tiles
// (VO) where they fit (KV_APART), else V over K; tmat serves only the output hand-over.
const uint VO = KV_APART ? BK * HS : 0;
const uint KV_ROWS = (KV_APART ? 2 : 1) * BK;
shared float16_t tkv[KV_ROWS * HS];
shared float tmat[BQ * VS];
#else
const uint KV_ROWS = BK;
shared float16_t tkv[BK * HS];  // the K tile, then (once its cross terms are stored) the V tile
// fp32 results of the matrices: the tile's cross terms (stride CS), then its P V (stride VS),
// finally the output hand-over. One array: each is read before the next is stored.
shared float tmat[BQ * (CS > VS ? CS : VS)];
shared float16_t tp16[BQ * PS];  // p E per pair, phase D's A operand, times PE_SCALE (below)
#define T_WEIGHT(r, c) tp16[(r) * PS + (c)]
#endif
// p E is at most 1 and reaches e^-10 (the decay's floor min_exponent) times a softmax weight: in
// fp16 that is subnormal or zero (6.1e-5 is fp16's smallest normal). Stored times PE_SCALE (exact),
// it keeps 11 bits down to 2^-28 and is not flushed above 2^-38; the fp32 P V blocks are scaled back.
// 2^14 keeps the largest weight (1) a quarter of fp16's range.
const float PE_SCALE = 16384.0, PE_UNSCALE = 1.0 / 16384.0;
#define TILE_P(x) float16_t((x) * PE_SCALE)
#define TILE_OUT tmat
const uint OUT_ROW = VS;
const uint OUT_CHUNK = D;  // every dim in one round of the hand-over (BQ x 2D floats fit)
// One cache word (KV_T: a vec2, or with RFA_KV_F16 a uint of two packed halves) into the fp16 K/V
// tile at o: fp16 words as they are (RAW_F16: unpackFloat2x16, no conversion), else through fp32.
void stage_kv_half2(uint o, KV_T w) {
#if RFA_KV_F16
  if (RAW_F16) {
    const f16vec2 h = unpackFloat2x16(w);
    tkv[o] = h.x;
    tkv[o + 1] = h.y;
    return;
  }
#endif
  const vec2 x = KV_LOAD(w);
  tkv[o] = float16_t(x.x);
  tkv[o + 1] = float16_t(x.y);
}
// Software pipelining (PREFETCH): each thread's share of the next tile's K and V cache words (its
// elements tid + q WG of the tile's BK x D), loaded before this tile's pair terms and stored into
// the tiles when they are free, so that the global loads run under phases B to D.
const uint KPT = PREFETCH ? (BK * D + WG - 1) / WG : 1;
// This thread's share of the K and V words of the tile from key j1 (keys up to kv_end) into kp, vp.
void prefetch_kv(uint tid, uint base, uint j1, uint kv_end, inout KV_T kp[KPT], inout KV_T vp[KPT]) {
  const uint nk1 = min(BK, kv_end - j1);
  [[unroll]] for (uint q = 0; q < KPT; ++q) {
    const uint e = tid + q * WG;
    const uint g = (base + slot_of(j1 + min(e / D, nk1 - 1))) * D + e % D;  // (in range; unused past nk1)
    kp[q] = Kc[g];
    vp[q] = Vc[g];
  }
}

// One subgroup's CMB x CMB output block C = sum over CMB-wide steps of A (CMB x CMB) B (CMB x CMB),
// the operands loaded from shared arrays at an element offset and stride, row- or column-major:
// CM_ZERO(); for each step CM_MMA(A, offset, stride, col_major, B, ...); CM_STORE(C, offset, stride)
// (CM_MMA_Q(k, ...): A the k-th resident fragment of Q, below).
#ifndef RFA_TILE_CM_EMU
#define RFA_TILE_CM_EMU 0
#endif
#if RFA_TILE_CM_EMU
// RFA_TILE_CM_EMU: the same kernel with each matrix operation done by the subgroup's lanes from the
// definitions of the loads (element (r, c) at offset + r stride + c, or offset + c stride + r
// column-major) and fp32 sums of fp16 products, so that devices without cooperative matrices
// (lavapipe) test every offset, stride and layout the real operations are given.
#define CM_AT(arr, off, st, col, r, c) float(arr[(off) + ((col) ? (c) * (st) + (r) : (r) * (st) + (c))])
#define CM_ZERO()         \
  float em[CMB * CMB / 4]; \
  for (uint q = 0; q < CMB * CMB / 4; ++q) em[q] = 0.0;
#define CM_MMA(A, offa, sa, ca, B, offb, sb, cb)                                                        \
  for (uint q = 0; q * gl_SubgroupSize < CMB * CMB; ++q) {                                           \
    const uint el = gl_SubgroupInvocationID + q * gl_SubgroupSize, i = el / CMB, j = el % CMB;       \
    [[unroll]] for (uint k = 0; k < CMB; ++k) em[q] += CM_AT(A, offa, sa, ca, i, k) * CM_AT(B, offb, sb, cb, k, j); \
  }
#define CM_STORE(C, offc, sc)                                                                       \
  for (uint q = 0; q * gl_SubgroupSize < CMB * CMB; ++q) {                                          \
    const uint el = gl_SubgroupInvocationID + q * gl_SubgroupSize;                                  \
    C[(offc) + (el / CMB) * (sc) + el % CMB] = em[q];                                               \
  }
// The resident Q fragments: read from tq at each use, at the offset the real load is given.
#define CM_Q_DECL()
#define CM_Q_LOAD(k, offq) {}
#define CM_MMA_Q(k, offq, B, offb, sb, cb) CM_MMA(tq, offq, HS, false, B, offb, sb, cb)
#elif RFA_TILE_CK
#define CM_TYPE_A coopmat<float16_t, gl_ScopeSubgroup, CMB, CMB, gl_MatrixUseA>
#define CM_TYPE_B coopmat<float16_t, gl_ScopeSubgroup, CMB, CMB, gl_MatrixUseB>
#define CM_TYPE_C coopmat<float, gl_ScopeSubgroup, CMB, CMB, gl_MatrixUseAccumulator>
#define CM_LAYOUT(col) ((col) ? gl_CooperativeMatrixLayoutColumnMajor : gl_CooperativeMatrixLayoutRowMajor)
#define CM_ZERO() CM_TYPE_C cm = CM_TYPE_C(0.0);
#define CM_MMA(A, offa, sa, ca, B, offb, sb, cb)  \
  {                                               \
    CM_TYPE_A ma;                                 \
    CM_TYPE_B mb;                                 \
    coopMatLoad(ma, A, offa, sa, CM_LAYOUT(ca));  \
    coopMatLoad(mb, B, offb, sb, CM_LAYOUT(cb));  \
    cm = coopMatMulAdd(ma, mb, cm);               \
  }
#define CM_STORE(C, offc, sc) coopMatStore(cm, C, offc, sc, gl_CooperativeMatrixLayoutRowMajor);
#define CM_Q_DECL() CM_TYPE_A qf[D2 / CMB];
#define CM_Q_LOAD(k, offq) coopMatLoad(qf[k], tq, offq, HS, gl_CooperativeMatrixLayoutRowMajor);
#define CM_MMA_Q(k, offq, B, offb, sb, cb)        \
  {                                               \
    CM_TYPE_B mb;                                 \
    coopMatLoad(mb, B, offb, sb, CM_LAYOUT(cb));  \
    cm = coopMatMulAdd(qf[k], mb, cm);            \
  }
#else
#define CM_ZERO() fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> cm = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#define CM_MMA(A, offa, sa, ca, B, offb, sb, cb)  \
  {                                               \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma, mb; \
    coopMatLoadNV(ma, A, offa, sa, ca);           \
    coopMatLoadNV(mb, B, offb, sb, cb);           \
    cm = coopMatMulAddNV(ma, mb, cm);             \
  }
#define CM_STORE(C, offc, sc) coopMatStoreNV(cm, C, offc, sc, false);
#define CM_Q_DECL() fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[D2 / 16];
#define CM_Q_LOAD(k, offq) coopMatLoadNV(qf[k], tq, offq, HS, false);
#define CM_MMA_Q(k, offq, B, offb, sb, cb)       \
  {                                               \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> mb; \
    coopMatLoadNV(mb, B, offb, sb, cb);           \
    cm = coopMatMulAddNV(qf[k], mb, cm);          \
  }
#endif
// Phase A with Q resident: subgroup g owns row block g % MB for the whole walk and keeps its
// D2 / CMB fragments of Q (loaded once: CM_Q_LOAD), forming the key blocks g / MB, + NS / MB, ...
// (CM_MMA_Q); the host runs the matrices only where the subgroups are a whole number of times
// the row blocks (NVIDIA: 4 subgroups of 32 lanes, 4 blocks of a 64-row tile).
const uint MB = BQ / CMB;
#else
const uint OUT_CHUNK = D < BKP / 2 ? D : BKP / 2;  // complex dims per round of the hand-over (fits tp)
shared TILE_T tq[BQ * DP];    // the Q tile (SDPA: times the scale)
// The K tile (phase A) and the V tile (phase D) at VO: staged together in two buffers (KV_APART),
// else V over K once phase A is done (a barrier more a tile; where two do not fit).
const uint VO = KV_APART ? BK * DP : 0;
shared TILE_T tkv[(KV_APART ? 2 : 1) * BK * DP];
shared float tp[BQ * BKP];    // p E per pair (phase D's weights); finally the output hand-over
#define T_WEIGHT(r, c) tp[(r) * BKP + (c)]
#define TILE_P(x) (x)
#define TILE_OUT tp
const uint OUT_ROW = BKP;
// Without subgroup reductions: each thread's maximum per row (and, after the last tile, its
// shares of the row's statistics), S per row.
const uint TMX = RFA_ROW_SG != 0 ? 1 : BQ * S;
shared float tmx[TMX];
#endif
// The Q tile of rows q0.. (rows past n_new zero: fully masked anyway); for the matrices as (re, im)
// halves, and the halves [2D, D2) of every Q, K and V row zeroed once (the staging never writes
// them), so that the padded blocks add exactly nothing (uninitialised shared memory could hold NaN bits).
void stage_tile_q(uint tid, uint q0, uint pos0, uint base) {
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
  for (uint e = tid; e < (BQ + KV_ROWS) * (D2 - 2 * D); e += WG) {
    const uint r = e / (D2 - 2 * D), c = 2 * D + e % (D2 - 2 * D);
    if (r < BQ) tq[r * HS + c] = float16_t(0.0);
    else tkv[(r - BQ) * HS + c] = float16_t(0.0);
  }
#endif
}

#if !RFA_SDPA
shared float tkn[BK];         // |K~|^2 and (hi, lo) times of the tile's keys
shared vec2 tkt[BK];
shared float tqn[BQ];         // |Q~|^2 and (hi, lo) times of the rows
shared vec2 tqt[BQ];
// Integer times (lean per-pair math): a time that is an exact integer in [0, 2^24) with no low
// part, else a sentinel (rows -2^29, keys +2^29) that sends every lag it enters past any table
// (|lag| >= 2^29 - 2^24; never INT_MIN, so abs() is defined). Then a pair's table index is one
// integer subtraction; other pairs take the float lag.
shared int tqi[BQ];
shared int tki[BK];
const int ROW_NO_INT = -(1 << 29), KEY_NO_INT = 1 << 29;
int integer_time(vec2 t, int none) {
  return (t.y == 0.0 && t.x >= 0.0 && t.x < 16777216.0 && t.x == floor(t.x)) ? int(t.x) : none;
}
// The rows' terms: |Q~|^2, the (hi, lo) time and its integer time (rows past n_new zero).
void stage_tile_rows(uint tid, uint q0, uint pos0, uint base, uint tbase) {
  for (uint r = tid; r < BQ; r += WG) {
    const bool live = q0 + r < pc.n_new;
    const uint s = slot_of(pos0 + q0 + r);
    tqn[r] = live ? q_norm2[base + s] : 0.0;
    tqt[r] = live ? ts[tbase + s] : vec2(0.0);
    tqi[r] = integer_time(tqt[r], ROW_NO_INT);
  }
}
// Stages the key terms of the tile's nk keys from j0: |K~|^2, the (hi, lo) time and its integer
// time. Both tile layouts use it (before their barrier).
void stage_tile_keys(uint tid, uint base, uint tbase, uint j0, uint nk) {
  for (uint e = tid; e < nk; e += WG) {
    const uint s = slot_of(j0 + e);
    tkn[e] = k_norm2[base + s];
    tkt[e] = ts[tbase + s];
    tki[e] = integer_time(tkt[e], KEY_NO_INT);
  }
}
// The lag table's rows of a tile's pairs, staged in shared memory (lean per-pair math: a shared
// read instead of a 16-byte global gather per pair). Where times are integers that grow with
// position (the common case: times are positions), the lags of rows [r0, r1] and keys [j0, j1] lie
// in [t(r0) - t(j1), t(r1) - t(j0)], at most BQ + BK - 1 indices: the window [tlag_lo,
// tlag_lo + TW) is staged from those four times alone, with the keys, before the tile's first
// barrier. Any pair outside it (times that do not grow with position) reads the table itself, so
// the window is a cache, never a condition of correctness; with no integer times tlag_lo is past
// every index (idx - tlag_lo wraps to >= TW). Both tile layouts use it.
const uint TW = BQ + BK;
shared vec4 tlag[TW];
uint tlag_lo;                 // the window's first index (the same in every thread: uniform)
const uint TLAG_NONE = 1u << 30;
// The window of the tile whose first and last live rows have integer times ri0, ri1 and whose
// first and last keys ki0, ki1 (the sentinels of integer_time() when not integers), and its staging.
void stage_lag_window(uint tid, uint h, int ri0, int ri1, uint tbase, uint j0, uint nk) {
  const int ki0 = integer_time(ts[tbase + slot_of(j0)], KEY_NO_INT);
  const int ki1 = integer_time(ts[tbase + slot_of(j0 + nk - 1)], KEY_NO_INT);
  const bool ints = ri0 != ROW_NO_INT && ri1 != ROW_NO_INT && ki0 != KEY_NO_INT && ki1 != KEY_NO_INT;
  const int a = ri0 - ki1, b = ri1 - ki0;  // the tile's signed lags, where times grow
  // Causal pairs are the non-negative lags; the others' index is |lag|.
  const int lo = CAUSAL ? max(a, 0) : (a >= 0 ? a : (b <= 0 ? -b : 0));
  tlag_lo = ints && pc.table_lags != 0 ? uint(lo) : TLAG_NONE;
  if (tlag_lo == TLAG_NONE) return;
  for (uint e = tid; e < TW; e += WG) {
    const uint idx = tlag_lo + e;
    if (idx < pc.table_lags) tlag[e] = lag_tab[h * pc.table_lags + idx];
  }
}
// A visible pair's logit (base 2), its decay E and the gate's energy, from the staged times and
// norms of tile row r and tile key c and their cross term: the table's terms where the lag is an
// integer index (exact: both times below 2^24), from the staged window where it holds the lag,
// else the float lag's. Both tile layouts use it.
float tile_pair_logit(Head P, uint h, uint r, uint c, float cross, out float E, out float energy) {
  const int li = tqi[r] - tki[c];
  const uint idx = uint(CAUSAL ? li : abs(li));
  LagTerms t;
  if (idx < pc.table_lags) {
    const uint u = idx - tlag_lo;
    t = entry_terms(P, float(idx), u < TW ? tlag[u] : lag_tab[h * pc.table_lags + idx]);
  } else {
    const vec2 tiv = tqt[r], tj = tkt[c];
    float lag = (tiv.x - tj.x) + (tiv.y - tj.y);
    if (!CAUSAL) lag = abs(lag);
    t = pair_lag_terms(P, h, lag);
  }
  float logit;
  rfa_pair_logit2(P, t, tqn[r], tkn[c], cross, logit, energy);
  E = t.E;
  return logit;
}
#endif

// Before the walk: the Q tile and the rows' terms staged (the barrier is the caller's), and the
// workgroup's keys [kv_begin, kv_end) (causal: up to its last row, from its first row's oldest key)
// and the integer times of its first and last live rows (each tile's lag window; RFA only).
struct TileSpan {
  uint kv_begin, kv_end;
  int ri0, ri1;
};
TileSpan begin_tile_walk(uint tid, uint q0, uint pos0, uint kv_len, uint base, uint tbase) {
  TileSpan t;
  const uint last_q = min(q0 + BQ, pc.n_new) - 1;
  t.kv_end = CAUSAL ? min(kv_len, pos0 + last_q + 1) : kv_len;
  t.kv_begin = CAUSAL ? first_key(pos0 + q0) : 0;
  stage_tile_q(tid, q0, pos0, base);
  t.ri0 = t.ri1 = 0;
#if !RFA_SDPA
  stage_tile_rows(tid, q0, pos0, base, tbase);
  t.ri0 = integer_time(ts[tbase + slot_of(pos0 + q0)], ROW_NO_INT);
  t.ri1 = integer_time(ts[tbase + slot_of(pos0 + last_q)], ROW_NO_INT);
#endif
  return t;
}

// The mask of the key tile from j0 (nk keys) for the rows from q0 (positions from pos0). Interior
// tiles (a full key tile, every row live, every key before the diagonal and inside every row's
// window) skip it: one branch per tile, the same for all its threads.
bool tile_interior(uint q0, uint pos0, uint j0, uint nk) {
  return nk == BK && q0 + BQ <= pc.n_new &&
         (!CAUSAL || (j0 + BK <= pos0 + q0 + 1 && j0 >= first_key(pos0 + q0 + BQ - 1)));
}
// Whether tile row r sees tile key c: a live row, a staged key, causal and inside the row's window.
bool tile_visible(uint q0, uint pos0, uint j0, uint nk, uint r, uint c) {
  const uint qr = q0 + r, ii = pos0 + qr, j = j0 + c;
  return qr < pc.n_new && c < nk && (!CAUSAL || (j <= ii && j >= first_key(ii)));
}

// After the walk: row min(tid, BQ - 1)'s statistics, handed over in TILE_OUT (m, l, then the
// gate's me, le). Every thread reads (those past BQ the last row, unused).
#if RFA_SDPA
void read_row_stats(uint tid, inout float m, inout float l) {
#else
void read_row_stats(uint tid, inout float m, inout float l, inout float me, inout float le) {
#endif
  const uint o = min(tid, BQ - 1) * OUT_ROW;
  m = TILE_OUT[o];
  l = TILE_OUT[o + 1];
#if !RFA_SDPA
  if (GATE) {
    me = TILE_OUT[o + 2];
    le = TILE_OUT[o + 3];
  }
#endif
}

#if RFA_TILE_PE
// The per-element form's operations on an accumulator's elements (GL_NV_cooperative_matrix2's
// coopMatPerElementNV passes each element's row i and column j within the CMB x CMB block, its
// value and the further arguments; coopMatReduceNV combines a row). The walk's place is
// module-scope state, the same in every lane, set by the walk before each tile: callbacks may not
// take it from shared memory by barrier (they run unordered, lane by lane).
uint pe_q0, pe_pos0, pe_j0, pe_nk;
bool pe_interior;
#if !RFA_SDPA
Head pe_head;
uint pe_h;
#endif
// Whether tile row r sees tile key c (the scalar tile's mask).
bool pe_visible(uint r, uint c) { return pe_interior || tile_visible(pe_q0, pe_pos0, pe_j0, pe_nk, r, c); }
// The block's element (i, j), whose first tile row and key are rb, cb: the logit (base 2) over its
// cross term, -inf where masked; RFA's pair terms (lag, E, B, P, the Student-t residual) there.
float pe_logit(const in uint i, const in uint j, const in float cross, const in uint rb, const in uint cb) {
  const uint r = rb + i, c = cb + j;
  if (!pe_visible(r, c)) return NEG_INF;
#if RFA_SDPA
  return cross;
#else
  float E, energy;
  return tile_pair_logit(pe_head, pe_h, r, c, cross, E, energy);
#endif
}
#if !RFA_SDPA
// The gate's energy of the pair (natural log), -inf where masked.
float pe_energy(const in uint i, const in uint j, const in float cross, const in uint rb, const in uint cb) {
  const uint r = rb + i, c = cb + j;
  if (!pe_visible(r, c)) return NEG_INF;
  float E, energy;
  tile_pair_logit(pe_head, pe_h, r, c, cross, E, energy);
  return energy;
}
#endif
// The weight p of the pair times its decay E (RFA; SDPA E = 1), times PE_SCALE: phase D's operand.
// E is looked up again (the lag table's window in shared memory for integer lags; the logit's
// transcendental is dead here): a callback returns one value, and keeping E from the logit's call
// would take the BQ x BK array this form exists to avoid.
float pe_weight(const in uint i, const in uint j, const in float p, const in uint rb, const in uint cb) {
#if RFA_SDPA
  return p * PE_SCALE;
#else
  if (p == 0.0) return 0.0;  // masked (and its lag may be outside every table)
  float E, energy;
  tile_pair_logit(pe_head, pe_h, rb + i, cb + j, 0.0, E, energy);
  return p * E * PE_SCALE;
#endif
}
float pe_max(const in uint i, const in uint j, const in float a, const in float b) { return max(a, b); }
// exp2(x - m) against a row maximum m (0 where the row has no key yet or x is masked).
float pe_exp2_rel(const in uint i, const in uint j, const in float x, const in float m) {
  return m == NEG_INF ? 0.0 : exp2(x - m);
}
float pe_exp_rel(const in uint i, const in uint j, const in float x, const in float m) {
  return m == NEG_INF ? 0.0 : exp(x - m);
}
// The accumulators' factor when a row's maximum moves from m_old to m_new (base 2; natural).
float pe_rescale2(const in uint i, const in uint j, const in float m_old, const in float m_new) {
  return m_new == NEG_INF ? 1.0 : exp2(m_old - m_new);
}
float pe_rescale(const in uint i, const in uint j, const in float m_old, const in float m_new) {
  return m_new == NEG_INF ? 1.0 : exp(m_old - m_new);
}
float pe_combine_max(const in float a, const in float b) { return max(a, b); }
float pe_combine_add(const in float a, const in float b) { return a + b; }
#endif

#endif
