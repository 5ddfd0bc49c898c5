// The fused, flash-style attention kernel shared by the kernels rfa_attention (RFA_SDPA 0) and sdpa
// (RFA_SDPA 1), so that the benchmark's yardstick has exactly the same tiling and online softmax.
//
// One workgroup serves BQ query rows of one (batch row, head); S threads share each row and split
// its keys (S = 1 for prefill, S = 64 / BQ = 1 for a decode step), merging their (m, l, acc) states
// at the end: by subgroup operations over the row's S lanes where the device has them (RFA_ROW_SG,
// the *_sg / *_sx kernels: no shared memory, no barrier), else in shared memory. Keys stream
// through shared memory in tiles of BK; causal workgroups stop at their last row's position. Per
// tile a thread first forms its logits (pass 1), then rescales once and accumulates
// exp(logit - m) E V~ (pass 2). No N x N matrix exists anywhere.
//
// The caches are rings of `capacity` slots: absolute position p lives in slot p % capacity (without
// a window the session's capacity covers every position, so the slot is the position). Where the
// new positions start (pos0) and how many keys exist (kv_len) come from a small buffer, not from
// push constants, so that one recorded command buffer serves every step of a stream. With a window
// W, query i sees keys [i - W + 1, i] only (a banded causal mask).
//
// Variants, all of one body so that every path shares the same online softmax and epilogue:
// - SPLIT > 1 (split-k): workgroup x = (query group, key split); each split streams its share of
//   the keys and writes its partial state (m, l, energy m/l, unnormalised acc) to `part`; the
//   reduce variant (RFA_REDUCE, the *_reduce kernels) merges the splits of a row and runs the epilogue.
//   A decode step then launches B x H x SPLIT workgroups instead of B x H.
// - Lag table (pc.table_lags > 0): E, B and P of integer lags come from a per-head table built
//   by rfa_lag_table.comp with the same lag_terms() code, so a pair whose float lag is an integer
//   below the table's size gets bit-for-bit the exact path's terms without a transcendental.
// - RFA_KV_F16: the K and V caches hold fp16 (f16vec2) values; everything after the load is fp32.
#extension GL_GOOGLE_include_directive : require
// [[unroll]] on the loops over D inside the walk over keys: CPU drivers (lavapipe) cap a loop's
// iterations (see common/rfa_cache_ring.glsl); unrolled, the only loops left iterate over keys.
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"
#ifndef RFA_REDUCE
#define RFA_REDUCE 0
#endif
// RFA_TILE: the cooperative tile of common/attention_tile.glsl replaces the walk over keys.
#ifndef RFA_TILE
#define RFA_TILE 0
#endif

#include "kernel_ids.h"  // the ids, shared with the ops that set them
layout(local_size_x_id = kAttnWG) in;
layout(constant_id = kAttnWG) const uint WG = 64;   // BQ * S
layout(constant_id = kAttnBQ) const uint BQ = 64;   // query rows per workgroup
layout(constant_id = kAttnS) const uint S = 1;      // threads per query row (RFA_TILE: per key/dim group)
layout(constant_id = kAttnBK) const uint BK = 32;   // keys per shared-memory tile
layout(constant_id = kAttnD) const uint D = 32;     // complex dims per head
layout(constant_id = kAttnDC) const uint DC = 8;    // complex components merged per reduction round
layout(constant_id = kAttnRED) const uint RED = 1;  // WG * DC when S > 1, else 1
layout(constant_id = kAttnFIN) const uint FIN = 1;  // BQ * D when S > 1, else 1
layout(constant_id = kAttnCausal) const bool CAUSAL = true;
#if !RFA_SDPA
layout(constant_id = kAttnCov) const uint COV = 1;           // rfa::Covariance
layout(constant_id = kAttnBias) const uint BIAS = 1;         // rfa::AdditiveBias
layout(constant_id = kAttnPrec) const uint PREC = 1;         // rfa::RobustPrecision
layout(constant_id = kAttnRobust) const bool ROBUST = true;  // Student-t kernel
layout(constant_id = kAttnFullResid) const bool FULL_RESID = true;
layout(constant_id = kAttnCounterRot) const bool COUNTER_ROT = true;
layout(constant_id = kAttnShiftRot) const bool SHIFT_ROT = true;
layout(constant_id = kAttnGate) const bool GATE = false;  // also turns on the energy log-sum-exp
layout(constant_id = kAttnOutNorm) const bool OUT_NORM = false;
const bool WANT_VCOV = false;
#endif
// CPU devices (lavapipe): read keys and values straight from the cache instead of staging tiles in
// shared memory. There "global" memory is the CPU cache already, and every barrier switches all
// the workgroup's invocations; without staging the prefill loop needs no barrier at all.
// The v3 switches (docs/math.md §9, "Kernels v3"; each a KernelOptions field, so that one build
// times old and new side by side): FMA the cross term as two explicit fused multiply-adds per
// complex dimension (else dot + add); Q_REGS the scalar tile's Q rows in registers for the whole
// walk (else re-read from shared memory per dimension); PAD the p E (and the matrices' cross-term)
// rows padded to 8 words mod 32 (no bank conflicts between a subgroup's row groups; else 1 and 4);
// F16C dims whose fp16 products are summed in fp16 before one conversion (fp16 products; 1: every
// product converted); PREFETCH the matrix tile's next K and V loaded into registers before the
// pair terms (software pipelining); RAW_F16 fp16 cache words copied into the matrices' fp16 tiles
// as they are (else unpacked to fp32 and converted back); LAG_E2 E^2 read from the lag table.
#if RFA_SDPA
layout(constant_id = kSdpaFma) const bool FMA = true;
layout(constant_id = kSdpaQRegs) const bool Q_REGS = false;
layout(constant_id = kSdpaPad) const bool PAD = true;
layout(constant_id = kSdpaF16Chunk) const uint F16C = 4;
layout(constant_id = kSdpaPrefetch) const bool PREFETCH = true;
layout(constant_id = kSdpaRawF16) const bool RAW_F16 = true;
const bool LAG_E2 = false;
#else
layout(constant_id = kAttnFma) const bool FMA = true;
layout(constant_id = kAttnQRegs) const bool Q_REGS = false;
layout(constant_id = kAttnPad) const bool PAD = true;
layout(constant_id = kAttnF16Chunk) const uint F16C = 4;
layout(constant_id = kAttnPrefetch) const bool PREFETCH = true;
layout(constant_id = kAttnRawF16) const bool RAW_F16 = true;
layout(constant_id = kAttnLagE2) const bool LAG_E2 = true;
#endif
#if RFA_SDPA
layout(constant_id = kSdpaDirectKv) const bool DIRECT_KV = false;
layout(constant_id = kSdpaSplit) const uint SPLIT = 1;  // key splits per row (split-k)
layout(constant_id = kSdpaKvApart) const bool KV_APART = true;  // the scalar tile: K, V in two buffers
#define RFA_CM_BLOCK_ID kSdpaCmBlock  // the KHR matrices' side (common/attention_tile.glsl)
#else
layout(constant_id = kAttnDirectKv) const bool DIRECT_KV = false;
layout(constant_id = kAttnSplit) const uint SPLIT = 1;  // key splits per row (split-k)
layout(constant_id = kAttnKvApart) const bool KV_APART = true;  // the scalar tile: K, V in two buffers
#define RFA_CM_BLOCK_ID kAttnCmBlock  // the KHR matrices' side (common/attention_tile.glsl)
#endif
#if !RFA_SDPA
layout(constant_id = kAttnPhase) const uint PHASE = 0;  // rfa::PhaseSource: 0 omega t, else the phase ring
#endif

#define NEG_INF uintBitsToFloat(0xff800000u)

#if RFA_SDPA
layout(std430, binding = 0) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 1) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 2) readonly buffer Vb { KV_T Vc[]; };
layout(std430, binding = 3) writeonly buffer Ob { float attn_out[]; };
layout(std430, binding = 4) writeonly buffer Mb { float row_max[]; };
layout(std430, binding = 5) writeonly buffer Lb { float row_sum[]; };
layout(std430, binding = 6) readonly buffer Pb { uint pos0; uint kv_len; } span;
layout(std430, binding = 7) buffer PartB { float part[]; };  // split-k partial states (slot kSdpaBindPartials)
#else
layout(std430, binding = 0) readonly buffer Hb { float hp[]; };
layout(std430, binding = 1) readonly buffer Wb { vec2 omega[]; };      // (hi, lo) [H*D]
layout(std430, binding = 2) readonly buffer Rb { vec2 shift_rot[]; };  // e^{i omega s_h} [H*D]
layout(std430, binding = 3) readonly buffer Gb { float gain_o[]; };    // [H*D]
layout(std430, binding = 4) readonly buffer Tb { vec2 ts[]; };         // (hi, lo) [B, capacity]
layout(std430, binding = 5) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 6) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 7) readonly buffer Vb { KV_T Vc[]; };
layout(std430, binding = 8) readonly buffer QNb { float q_norm2[]; };
layout(std430, binding = 9) readonly buffer KNb { float k_norm2[]; };
layout(std430, binding = 10) readonly buffer VNb { float v_norm[]; };  // [B*n_new, 2*H*D] half-split
layout(std430, binding = 11) writeonly buffer Ob { float attn_out[]; };
layout(std430, binding = 12) writeonly buffer Mb { float row_max[]; };
layout(std430, binding = 13) writeonly buffer Lb { float row_sum[]; };
layout(std430, binding = 14) writeonly buffer Eb { float row_energy[]; };
layout(std430, binding = 15) readonly buffer Pb { uint pos0; uint kv_len; } span;  // of this call
layout(std430, binding = 16) readonly buffer LTb { vec4 lag_tab[]; };  // [H, table_lags] (E, B, P, 0)
layout(std430, binding = 17) buffer PartB { float part[]; };           // split-k partials (kAttnBindPartials)
layout(std430, binding = 18) readonly buffer THb { vec2 theta[]; };    // (hi, lo) [B, capacity, H*D] (PHASE != 0)
#include "rfa_phase.glsl"
#include "rfa_lag_kernels.glsl"
#include "rfa_logit.glsl"
#endif

#if RFA_SDPA
const float RFA_LN2 = 0.69314718055994531;
const float RFA_LOG2E = 1.4426950408889634;
#endif
// Minimum keys per split of split-k, counted from the live context (kv_len): fewer splits run
// than were dispatched while the stream is short (ops::kMinSplitKeys; docs/math.md §9).
const uint MIN_SPLIT_KEYS = 256;

#include "push_layouts.h"
layout(push_constant) uniform Push { AttentionPush pc; };

// A split's partial state: m, l, energy m, energy l, then acc[D] (unnormalised, fp32).
const uint PART_STRIDE = 4 + 2 * D;

#include "rfa_cache_ring.glsl"

#if !RFA_TILE  // the tile declares its own shared memory (common/attention_tile.glsl)
// Key/value rows padded to an odd number of vec2 (DK): the S threads of a row read keys jj, jj + 1,
// ... at once, so a row stride of D (64 words at D = 32) put all of them in one bank.
const uint DK = D | 1u;
// Components a thread stages at once (a divisor of D): 16 bytes of the cache.
const uint VW = RFA_KV_F16 != 0 ? (D % 4 == 0 ? 4 : D % 2 == 0 ? 2 : 1) : (D % 2 == 0 ? 2 : 1);
shared vec2 sk[BK * DK];
shared vec2 sv[BK * DK];
#if !RFA_SDPA
shared float skn[BK];
shared vec2 st[BK];
#endif
#if !RFA_ROW_SG  // the merge of a row's S states through shared memory (else subgroup operations)
shared float sm[WG];
shared float sl[WG];
shared float sle[WG];
shared vec2 sred[RED];
shared vec2 sfin[FIN];
#endif
#endif
// row_group_max, row_group_add over a row's S lanes (RFA_ROW_SG 1: clustered subgroup operations,
// 2: shuffle-xor butterflies): the tile's row statistics, the direct walk's merge.
#include "row_group_reduce.glsl"

#if !RFA_SDPA
// E, B and P of one pair: from the lag table when the float lag is an integer the table covers
// (identical to lag_terms() of that lag: the table was built by it), else computed.
// The index is int(lag), taken when it converts back to the same float: exactly the pairs of the
// test lag >= 0, < table_lags, == floor(lag) (a negative lag wraps past table_lags as a uint), with
// two conversions instead of floor(), two comparisons and uint().
// A pair's terms from its lag-table entry e (E, B, P, 0) of that lag.
LagTerms entry_terms(Head P, float lag, vec4 e) {
  LagTerms t;
  t.dt = lag + P.shift;
  t.E = e.x;
  t.E2 = LAG_E2 ? e.w : e.x * e.x;  // the table's spare slot holds E * E
  t.B = e.y;
  t.P = e.z;
  t.vcov = 1.0;  // not needed by the logit
  return t;
}
LagTerms table_terms(Head P, uint h, float lag, uint idx) {
  return entry_terms(P, lag, lag_tab[h * pc.table_lags + idx]);
}
LagTerms pair_lag_terms(Head P, uint h, float lag) {
  const int li = int(lag);
  if (uint(li) < pc.table_lags && float(li) == lag) return table_terms(P, h, lag, uint(li));
  return lag_terms(P, lag);
}
#endif

// acc + Re(conj(q) k): two explicit fused multiply-adds (FMA), or dot() and an add.
float cross_add(float acc, vec2 q, vec2 k) { return FMA ? fma(q.y, k.y, fma(q.x, k.x, acc)) : acc + dot(q, k); }

#if RFA_TILE
#include "attention_tile.glsl"
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x;
  // The row this thread merges and finishes (the tile: threads [0, BQ), one row each). The direct
  // walk with RFA_ROW_SG numbers its threads by subgroup lanes, so that the S threads of a row are
  // consecutive lanes of one subgroup (one cluster of row_group_*): the host runs it only where the
  // workgroup is whole subgroups of at least S lanes (ops::row_subgroup_reduce).
#if RFA_ROW_SG && !RFA_TILE && !RFA_REDUCE
  const uint tw = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  const uint tw = tid;
#endif
  const uint rloc = RFA_TILE != 0 ? tid : tw / S, sidx = RFA_TILE != 0 ? 0 : tw % S;
  const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  // Split-k: workgroup x = query group * SPLIT + split (the reduce pass has one split per x).
  // Causal calls: the heaviest row groups (the last rows see the most keys) first, so that the
  // long workgroups start early and the short ones fill in at the end (a bijection on x).
  const uint wgx = (RFA_REDUCE == 0 && CAUSAL) ? gl_NumWorkGroups.x - 1 - gl_WorkGroupID.x : gl_WorkGroupID.x;
  const uint split = (RFA_REDUCE == 0 && SPLIT > 1) ? wgx % SPLIT : 0;
  const uint qgroup = (RFA_REDUCE == 0 && SPLIT > 1) ? wgx / SPLIT : wgx;
  const uint q0 = qgroup * BQ;
  const uint qi = q0 + rloc;
  const bool row_live = qi < pc.n_new && rloc < BQ;
  const uint pos0 = span.pos0, kv_len = span.kv_len;
  const uint i = pos0 + qi;
  const uint base = (b * pc.heads + h) * pc.capacity;
  const uint icell = base + slot_of(i);
  const uint tbase = b * pc.capacity;
  const uint prow = ((b * pc.heads + h) * pc.n_new + qi) * SPLIT;  // this row's first partial
#if !RFA_SDPA
  const Head P = load_head(h);
  const vec2 ti = row_live ? ts[tbase + slot_of(i)] : vec2(0.0);
  float me = NEG_INF, le = 0.0;  // energy log-sum-exp state (GATE only)
#endif
  float m = NEG_INF, l = 0.0;
  vec2 acc[D];
  for (uint d = 0; d < D; ++d) acc[d] = vec2(0.0);

#if RFA_REDUCE
  // Merge the SPLIT partial states of this row (one thread per row).
  if (row_live) {
    for (uint s = 0; s < SPLIT; ++s) m = max(m, part[(prow + s) * PART_STRIDE]);
#if !RFA_SDPA
    for (uint s = 0; s < SPLIT; ++s) me = max(me, part[(prow + s) * PART_STRIDE + 2]);
#endif
    for (uint s = 0; s < SPLIT; ++s) {
      const uint o = (prow + s) * PART_STRIDE;
      const float ms = part[o];
      if (ms == NEG_INF) continue;  // a split without keys
      const float f = exp2(ms - m);  // m in base 2 (logit log2(e))
      l += part[o + 1] * f;
      for (uint d = 0; d < D; ++d) acc[d] += f * vec2(part[o + 4 + 2 * d], part[o + 5 + 2 * d]);
#if !RFA_SDPA
      if (GATE && part[o + 2] != NEG_INF) le += part[o + 3] * exp(part[o + 2] - me);
#endif
    }
  }
#elif RFA_TILE && RFA_TILE_PE
#include "attention_tile_walk_pe.glsl"
#elif RFA_TILE
#include "attention_tile_walk.glsl"
#else
  const uint last_q = min(q0 + BQ, pc.n_new) - 1;
  uint kv_end = CAUSAL ? min(kv_len, pos0 + last_q + 1) : kv_len;
  uint kv_begin = CAUSAL ? first_key(pos0 + q0) : 0;  // the workgroup's first row sees the oldest key
  if (SPLIT > 1) {
    // This split's share of the workgroup's keys, whole tiles each (a split past the end has none).
    // At least MIN_SPLIT_KEYS keys each, counted from the live context: a short stream in a long
    // cache runs few splits (the rest have no keys and return at once) instead of SPLIT tiny ones.
    const uint n_keys = kv_end > kv_begin ? kv_end - kv_begin : 0;
    const uint chunk = (max((n_keys + SPLIT - 1) / SPLIT, MIN_SPLIT_KEYS) + BK - 1) / BK * BK;
    const uint kb = kv_begin + min(split * chunk, n_keys);
    kv_end = min(kv_end, kb + chunk);
    kv_begin = kb;
  }
  const uint row_first = CAUSAL ? first_key(i) : 0;

  vec2 q[D];
  for (uint d = 0; d < D; ++d) q[d] = row_live ? Qc[icell * D + d] : vec2(0.0);
#if RFA_SDPA
  for (uint d = 0; d < D; ++d) q[d] *= pc.scale * RFA_LOG2E;  // logits in base 2 (exp2 softmax)
#else
  const float qn = row_live ? q_norm2[icell] : 0.0;
  float ee[BK], en[BK];
#endif
  float lg[BK];

  for (uint j0 = kv_begin; j0 < kv_end; j0 += BK) {
    const uint nk = min(BK, kv_end - j0);
    // ks: the ring slot of key j0 + jj (DIRECT_KV) — computed once per key by the loops below.
#define KEY(ks, jj, d) (DIRECT_KV ? KV_LOAD(Kc[(base + (ks)) * D + (d)]) : sk[(jj) * DK + (d)])
#define VAL(ks, jj, d) (DIRECT_KV ? KV_LOAD(Vc[(base + (ks)) * D + (d)]) : sv[(jj) * DK + (d)])
#define KNORM(ks, jj) (DIRECT_KV ? k_norm2[base + (ks)] : skn[jj])
#define KTIME(ks, jj) (DIRECT_KV ? ts[tbase + (ks)] : st[jj])
    if (!DIRECT_KV) {
      // VW consecutive components per thread (16 bytes of fp32 K where D is even, of fp16 K where
      // D % 4 == 0): loads a driver can merge into one wide load, still coalesced across threads.
      for (uint e = tid * VW; e < nk * D; e += WG * VW) {
        const uint ks = slot_of(j0 + e / D), se = (e / D) * DK + e % D, ge = (base + ks) * D + e % D;
        [[unroll]] for (uint w = 0; w < VW; ++w) sk[se + w] = KV_LOAD(Kc[ge + w]);
        [[unroll]] for (uint w = 0; w < VW; ++w) sv[se + w] = KV_LOAD(Vc[ge + w]);
      }
#if !RFA_SDPA
      for (uint e = tid; e < nk; e += WG) {
        const uint ks = slot_of(j0 + e);
        skn[e] = k_norm2[base + ks];
        st[e] = ts[tbase + ks];
      }
#endif
      barrier();
    }
    if (row_live) {
      const uint jend = CAUSAL ? (i + 1 > j0 ? min(nk, i + 1 - j0) : 0) : nk;
      const uint jbeg = row_first > j0 ? row_first - j0 : 0;  // keys before the row's window
      float tmax = NEG_INF;
#if !RFA_SDPA
      float emax = NEG_INF;
#endif
      bool any = false;
      for (uint jj = jbeg + sidx; jj < jend; jj += S) {
        const uint ks = DIRECT_KV ? slot_of(j0 + jj) : 0;
        float cross = 0.0;
        [[unroll]] for (uint d = 0; d < D; ++d) cross = cross_add(cross, q[d], KEY(ks, jj, d));
#if RFA_SDPA
        lg[jj] = cross;
#else
        const vec2 tj = KTIME(ks, jj);
        float lag = (ti.x - tj.x) + (ti.y - tj.y);
        if (!CAUSAL) lag = abs(lag);
        const LagTerms t = pair_lag_terms(P, h, lag);
        float logit, energy;
        rfa_pair_logit2(P, t, qn, KNORM(ks, jj), cross, logit, energy);
        lg[jj] = logit;
        ee[jj] = t.E;
        en[jj] = energy;
        emax = max(emax, energy);
#endif
        tmax = max(tmax, lg[jj]);
        any = true;
      }
      if (any) {
        const float mn = max(m, tmax);
        const float sc = exp2(m - mn);  // logits and m in base 2
        m = mn;
        l *= sc;
        [[unroll]] for (uint d = 0; d < D; ++d) acc[d] *= sc;  // once per tile: past the loop cap at long context
#if !RFA_SDPA
        float mne = me, sce = 1.0;
        if (GATE) {
          mne = max(me, emax);
          sce = exp(me - mne);
          me = mne;
          le *= sce;
        }
#endif
        for (uint jj = jbeg + sidx; jj < jend; jj += S) {
          const uint ks = DIRECT_KV ? slot_of(j0 + jj) : 0;
          const float p = exp2(lg[jj] - m);
          l += p;
#if RFA_SDPA
          const float w = p;
#else
          const float w = p * ee[jj];  // decayed attention A = Ahat E (docs/reference-code.md §6)
          if (GATE) le += exp(en[jj] - me);
#endif
          [[unroll]] for (uint d = 0; d < D; ++d) acc[d] += w * VAL(ks, jj, d);
        }
      }
    }
    if (!DIRECT_KV) barrier();
  }

  // Merge the S partial states of each row (split keys).
  if (S > 1) {
#if RFA_ROW_SG
    // Across the row's S lanes by subgroup operations: no shared memory, no barrier; every lane
    // ends with the row's state (lane 0 goes on).
    const float mrow = row_group_max(m);
    const float f = m == NEG_INF ? 0.0 : exp2(m - mrow);
    l = row_group_add(l * f);
#if !RFA_SDPA
    if (GATE) {
      const float merow = row_group_max(me);
      le = row_group_add(me == NEG_INF ? 0.0 : le * exp(me - merow));
      me = merow;
    }
#endif
    [[unroll]] for (uint d = 0; d < D; ++d) acc[d] = row_group_add(acc[d] * f);
    m = mrow;
#else
    sm[tid] = m;
    barrier();
    float mrow = NEG_INF;
    for (uint s = 0; s < S; ++s) mrow = max(mrow, sm[rloc * S + s]);
    const float f = m == NEG_INF ? 0.0 : exp2(m - mrow);
    sl[tid] = l * f;
    barrier();
    float lrow = 0.0;
    for (uint s = 0; s < S; ++s) lrow += sl[rloc * S + s];
#if !RFA_SDPA
    if (GATE) {
      barrier();
      sm[tid] = me;
      barrier();
      float merow = NEG_INF;
      for (uint s = 0; s < S; ++s) merow = max(merow, sm[rloc * S + s]);
      sle[tid] = me == NEG_INF ? 0.0 : le * exp(me - merow);
      barrier();
      float lerow = 0.0;
      for (uint s = 0; s < S; ++s) lerow += sle[rloc * S + s];
      me = merow;
      le = lerow;
    }
#endif
    for (uint c0 = 0; c0 < D; c0 += DC) {
      for (uint k = 0; k < DC; ++k) sred[tid * DC + k] = acc[c0 + k] * f;
      barrier();
      for (uint k = sidx; k < DC; k += S) {
        vec2 sum = vec2(0.0);
        for (uint s = 0; s < S; ++s) sum += sred[(rloc * S + s) * DC + k];
        sfin[rloc * D + c0 + k] = sum;
      }
      barrier();
    }
    for (uint d = 0; d < D; ++d) acc[d] = sfin[rloc * D + d];
    m = mrow;
    l = lrow;
#endif
  }

#endif  // RFA_REDUCE

  if (!row_live || sidx != 0) return;
#if !RFA_REDUCE
  if (SPLIT > 1) {
    // Split-k: hand the partial state to the reduce pass, which runs the epilogue.
    const uint o = (prow + split) * PART_STRIDE;
    part[o] = l > 0.0 ? m : NEG_INF;
    part[o + 1] = l;
#if !RFA_SDPA
    part[o + 2] = (GATE && le > 0.0) ? me : NEG_INF;
    part[o + 3] = GATE ? le : 0.0;
#else
    part[o + 2] = NEG_INF;
    part[o + 3] = 0.0;
#endif
    for (uint d = 0; d < D; ++d) {
      part[o + 4 + 2 * d] = acc[d].x;
      part[o + 5 + 2 * d] = acc[d].y;
    }
    return;
  }
#endif
  // Epilogue (one thread per row): normalise, counter-rotate, gate, output norm, shift rotation.
  const bool has_keys = l > 0.0;
  const float inv_l = has_keys ? 1.0 / l : 0.0;
  for (uint d = 0; d < D; ++d) acc[d] *= inv_l;
  const uint HD = pc.heads * D;
  const uint orow = (b * pc.n_new + qi) * 2 * HD;
#if !RFA_SDPA
  if (COUNTER_ROT)
    for (uint d = 0; d < D; ++d) {
      // Rotated back by the row's own angle: omega t_i, or its accumulated phase.
      vec2 th = vec2(0.0);
      if (PHASE != 0) th = theta[(tbase + slot_of(i)) * HD + h * D + d];
      acc[d] = rfa_cmul(acc[d], rfa_cis(PHASE == 0 ? rfa_angle(omega[h * D + d], ti) : th.x + th.y));
    }
  float lse_energy = NEG_INF;
  if (GATE) {
    if (le > 0.0) lse_energy = me + log(le);
    // g = sigmoid(exp(gate_scale_log) (lse + c) - gate_prior_log); no key at all gives g = 0.
    const float x = P.gate_scale_exp * (lse_energy + P.gate_c) - P.gate_prior;
    const float g = le > 0.0 ? 1.0 / (1.0 + exp(-x)) : 0.0;
    for (uint d = 0; d < D; ++d) {
      const vec2 vn = vec2(v_norm[orow + h * D + d], v_norm[orow + HD + h * D + d]);
      acc[d] = g * acc[d] + (1.0 - g) * vn;
    }
  }
  if (OUT_NORM) {
    float ss = 0.0;
    for (uint d = 0; d < D; ++d) ss += dot(acc[d], acc[d]);
    const float inv = 1.0 / sqrt(ss / float(D) + 1e-6);
    for (uint d = 0; d < D; ++d) acc[d] *= inv * gain_o[h * D + d];
  }
  if (SHIFT_ROT)
    for (uint d = 0; d < D; ++d) acc[d] = rfa_cmul(acc[d], shift_rot[h * D + d]);
  row_energy[icell] = lse_energy;
#endif
  for (uint d = 0; d < D; ++d) {
    attn_out[orow + h * D + d] = acc[d].x;
    attn_out[orow + HD + h * D + d] = acc[d].y;
  }
  row_max[icell] = has_keys ? m * RFA_LN2 : NEG_INF;  // back to natural units
  row_sum[icell] = l;
}
