// The RFA attention op on the GPU (docs/math.md §2-§3, docs/reference-code.md §4-§8): rotate new Q/K/V into
// the stationary frame and the caches, then one fused flash-style kernel (online softmax, decayed
// aggregation, counter-rotation, gate, output norm, shift rotation). Never an N x N matrix. The
// probes the viewer reads from these caches are in ops/rfa_probe.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "rfa/params.hpp"

namespace rfa::ops {

// Per-layer parameters on the GPU, uploaded once: the layer's mechanism's packed table
// (mechanisms/mechanism.hpp layer_table: RFA's per-head table, shaders/common/rfa_head_table.h; AFA's
// and RT-RFA's beside it), omega as (hi, lo) float pairs, e^{i omega s_h}, and the complex norm
// gains [4][H*D] (q, k, v, o; 1 where a gain vector is empty).
class AttentionWeightsGpu {
 public:
  // Checks the parameters (the shared sizes, then the mechanism's own checks) and uploads them.
  static Result<AttentionWeightsGpu> create(gpu::Context& ctx, const AttentionParams& params);
  const AttentionParams& params() const { return params_; }
  const gpu::Buffer& table() const { return table_; }
  const gpu::Buffer& omega() const { return omega_; }
  const gpu::Buffer& shift_rotation() const { return shift_rot_; }
  const gpu::Buffer& gains() const { return gains_; }
  const gpu::Buffer& gain_o() const { return gain_o_; }
  // Learned accumulated steps: Phi [vocab][D] as (hi, lo) float pairs; invalid otherwise.
  const gpu::Buffer& step_table() const { return steps_; }

 private:
  AttentionParams params_;
  gpu::Buffer table_, omega_, shift_rot_, gains_, gain_o_, steps_;
};

// Per-layer caches: rings of `capacity` slots per (batch row, head); absolute position p lives in
// slot p % capacity (without a window, capacity covers every position and the slot is p). q, k, v:
// [B, H, capacity, D] complex as (re, im) floats, rotated into the stationary frame; q_norm2,
// k_norm2: |Q~|^2, |K~|^2 [B, H, capacity]; row_max m, row_sum l (Ahat = exp(logit - m) / l) and
// row_energy (log-sum-exp of the gate's energy; written only when the gate is on, -inf otherwise)
// [B, H, capacity]. The timestamps ring [B, capacity] (hi, lo) belongs to the caller (a session
// shares one among its layers). With `window` W > 0 (causal only) query i sees keys
// [i - W + 1, i]: a banded causal mask, so a stream can outlive the ring.
// `filled` is the number of positions recorded so far (record_rfa_attention raises it; a session
// replaying command buffers sets it); positions [oldest(), filled) are still in the ring.
// `span` is the {pos0, kv_len} pair the kernels read when a call gives its positions as numbers.
struct AttentionCache {
  uint32_t batch = 0, heads = 0, dim = 0, capacity = 0, window = 0;
  uint32_t filled = 0;
  // fp16 K/V: k and v hold packed fp16 pairs (one uint32 per complex component, packHalf2x16),
  // half the bytes; q and every statistic stay fp32 (docs/math.md §9 states the error).
  bool kv_f16 = false;
  // The integer-lag table (E, B, P per head and lag, [H, capacity] vec4), valid once
  // record_rfa_lag_table has run: table_lags is then the number of lags it covers, else 0.
  uint32_t table_lags = 0;
  // Split-k scratch: partial (m, l, energy m, energy l, acc[D]) states of up to max_splits key
  // splits for up to kSplitRows query rows per (batch row, head).
  uint32_t max_splits = 1;
  gpu::Buffer q, k, v, q_norm2, k_norm2, row_max, row_sum, row_energy, span, lag_table, partials;
  // Layers with an accumulated phase (AttentionParams::phase): the phase ring, (hi, lo) float pairs
  // [B, capacity, H*D] written by the scan pass before the rotation; invalid otherwise.
  gpu::Buffer theta;
  // What a mechanism keeps per cache beyond these (AFA: the caches, row statistics and normalisers of
  // the passes of its tied iterations), made by the mechanism's record_fused on first use.
  std::vector<gpu::Buffer> mechanism_buffers;
  uint32_t oldest() const { return filled > capacity ? filled - capacity : 0; }
  uint64_t kv_bytes_per_component() const { return kv_f16 ? 4 : 8; }
  static Result<AttentionCache> create(gpu::Context& ctx, uint32_t batch, uint32_t heads, uint32_t dim,
                                       uint32_t capacity, const char* label, uint32_t window = 0,
                                       bool kv_f16 = false, bool phase_ring = false);
};

// The positions one call adds: [pos0, pos0 + n_new) of every batch row, keys [0, pos0 + n_new).
// Given as numbers (positions == nullptr), the op records {pos0, kv_len} into cache.span itself
// (vkCmdUpdateBuffer) and checks them against the ring. Given as a buffer (two uint32 {pos0,
// kv_len} the host writes before each submit, checked by the host), one recorded command buffer
// serves every step of a stream: dispatch sizes depend on n_new and the cache only.
// token_ids: the call's token ids [B, n_new] as uint32, which layers with learned accumulated steps
// (PhaseSource::accumulated_learned) look their step angles up by; unused otherwise.
struct AttentionSpan {
  uint32_t pos0 = 0, n_new = 0;
  const gpu::Buffer* positions = nullptr;
  const gpu::Buffer* token_ids = nullptr;
};

// The kernels-v3 switches as a kernel is specialized (KernelOptions::attention_fma, ...; the
// shader's FMA, Q_REGS, PAD, F16C, PREFETCH, RAW_F16, LAG_E2: common/attention_body.glsl).
struct KernelSwitches {
  bool fma = true, q_registers = false, pad = true, prefetch = true, raw_f16 = true, lag_e2 = true;
  uint32_t f16_chunk = 4;
  bool pad_auto = true;  // pad left to the chooser: only where the padding does not make the tile smaller
};
// The switches `overrides` ask for, the defaults where they leave them (-1).
KernelSwitches kernel_switches(const KernelOptions& overrides);

// How the fused kernel runs for a shape: chosen from the device, the overrides and the shape,
// never ad hoc, and printed by rfa-bench and rfa-run --self-check (`why` says why).
struct AttentionTiling {
  uint32_t rows_per_group = 64;     // BQ
  uint32_t threads_per_row = 1;     // S: > 1 splits each row's keys inside a workgroup (decode);
                                    // the tile: threads sharing a row group's keys and dims
  uint32_t keys_per_tile = 32;      // BK
  uint32_t merge_chunk = 8;         // DC
  uint32_t workgroup = 64;          // BQ * S
  uint32_t groups_x = 1;            // ceil(n_new / BQ) * splits
  uint32_t splits = 1;              // split-k: key splits across workgroups, merged by a reduce pass
  bool direct_kv = false;           // read K/V straight from the cache (CPU devices), no tiles
  bool lag_table = true;            // integer lags read E, B, P from the cache's lag table
  bool tile = false;                // the cooperative tile (common/attention_tile.glsl): GPU prefill
  bool f16_math = false;            // the tile's Q/K/V tiles and products in fp16
  bool coopmat = false;             // the tile's two GEMMs on cooperative matrices (*_tile_cm)
  bool coopmat_emulated = false;    // ... emulated by subgroup lanes (*_tile_cm_emu; tests only)
  bool coopmat_khr = false;         // ... on VK_KHR_cooperative_matrix (*_tile_ck), else NV's (*_tile_cm)
  bool coopmat_pe = false;          // ... the KHR tile with pair terms, softmax and output per element of the
                                    // accumulators (VK_NV_cooperative_matrix2: *_tile_pe)
  uint32_t coopmat_block = 0;       // the matrices' square block side (KHR: the device's 8 or 16; NV 16)
  bool subgroup_reduce = false;     // the scalar tile's row max/sum, the direct walk's merge of a
                                    // row's S states, by subgroup operations over a row group's
                                    // lanes (else through shared memory and barriers):
  bool subgroup_shuffle = false;    // clustered reductions (*_sg), or shuffle-xor butterflies (*_sx)
  bool kv_apart = true;             // the scalar tile stages K and V in two buffers (3 barriers a
                                    // tile); false: V over K (4), where two do not fit
  uint32_t shared_bytes = 0;        // the tile's shared memory (0: the other paths)
  KernelSwitches v3;                // the v3 switches the kernel is specialized with
  std::string why;                  // one line: which path and why
};
// The complex components the threads of a row merge per round (DC): the largest divisor of D up
// to 8, so that any D runs the merge's loops in whole rounds.
uint32_t merge_chunk_for(uint32_t dim);
// The cooperative tile's threads per row group (S): the largest power of two up to 8 dividing D
// (S must divide D, for each thread's dims, and the power-of-two key tiles).
uint32_t tile_threads_per_group(uint32_t dim);
// The shared memory of the cooperative tile for a shape (what the shader declares). The scalar
// tile's row reductions without subgroup operations (subgroup_reduce false) add S floats a row;
// kv_apart: its K and V tiles in two buffers (else one, V staged over K); per_element: the matrix
// tile's per-element form (common/attention_tile_walk_pe.glsl: no cross-term or weight arrays).
uint32_t tile_shared_bytes(uint32_t rows, uint32_t keys, uint32_t dim, bool f16, bool gate, bool coopmat = false,
                           bool subgroup_reduce = false, bool kv_apart = true, uint32_t block = 16, bool pad = true,
                           bool per_element = false);
// How a workgroup of `wg` threads in row groups of `s` threads (the scalar tile's row groups, the
// direct walk's S threads per row) reduces over a row group (common/row_group_reduce.glsl): 1 by
// clustered subgroup operations (the device has subgroup arithmetic and clustered operations in
// compute), 2 by shuffle-xor butterflies (subgroup shuffles, no clustered operations: lavapipe,
// MoltenVK), either only where s is a power of two and the workgroup is whole subgroups of at
// least s lanes (a row group then lies in one subgroup); 0 through shared memory.
int row_subgroup_reduce(const gpu::Capabilities& caps, uint32_t wg, uint32_t s);
// The same for the scalar tile (its S is a power of two).
inline int tile_subgroup_reduce(const gpu::Capabilities& caps, uint32_t wg, uint32_t s) {
  return row_subgroup_reduce(caps, wg, s);
}
// Split-k applies to calls of at most this many query rows per (batch row, head).
constexpr uint32_t kSplitRows = 4;
// CPU devices: at most this many keys per thread. lavapipe stops an invocation's loops after
// 65,535 iterations in all (a guard against runaway shaders), and a thread walks two loops per
// key: a prefill of 34,000 keys on one thread per row went wrong from row 32,033.
constexpr uint32_t kCpuKeysPerThread = 16384;
// `capacity` (keys per row at most) and `batch * heads` decide split-k; 0 leaves it off.
// Calls of more rows than this take the cooperative tile on GPUs (decode steps do not).
constexpr uint32_t kTileMinRows = 8;
// CPU devices run the tile only when forced, and for at most this many keys (the loop cap).
constexpr uint32_t kCpuTileKeys = 8192;
// `gate`: the layer's gate is on (the cooperative-matrix tile then keeps a per-pair energy in shared
// memory; the scalar tile keeps it in registers).
AttentionTiling choose_attention_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                       uint32_t dim, uint32_t batch_heads = 0, uint32_t capacity = 0,
                                       bool gate = false);

// The shader of a tiling: `family` ("rfa_attention", "sdpa") + "_tile" / "_tile_f16" / "_tile_cm" /
// "_tile_ck" / "_tile_cm_emu", "_sg" / "_sx" for the clustered / shuffle subgroup reductions (the scalar tile's,
// the direct walk's merge), + "_kv16".
std::string attention_kernel_name(const char* family, const AttentionTiling& t, bool kv_f16);

// Records the lag table of `cache` for the layer `w` (one dispatch; the session records it once
// when it creates the caches). Until it has run, every pair computes its terms.
Status record_rfa_lag_table(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache);

// Records rotate + fused attention for the new positions of `span` in every batch row.
// timestamps: the [B, capacity] ring of (hi, lo) float pairs (split_timestamp), holding the new
// positions' times already. q/k/v_proj: [B*n_new, 2*H*D] half-split; v_norm_scratch and out:
// [B*n_new, 2*H*D]. Causal: query i sees keys [0, i] (the last `window` of them with a window);
// non-causal: keys [0, pos0 + n_new).
Status record_rfa_attention(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                            const gpu::Buffer& timestamps, const gpu::Buffer& q_proj, const gpu::Buffer& k_proj,
                            const gpu::Buffer& v_proj, gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                            const AttentionSpan& span);
inline Status record_rfa_attention(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                   AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer& q_proj,
                                   const gpu::Buffer& k_proj, const gpu::Buffer& v_proj, gpu::Buffer& v_norm_scratch,
                                   gpu::Buffer& out, uint32_t pos0, uint32_t n_new) {
  return record_rfa_attention(ctx, rec, w, cache, timestamps, q_proj, k_proj, v_proj, v_norm_scratch, out,
                              AttentionSpan{pos0, n_new, nullptr});
}

// Layers with an accumulated phase: theta of the span's new positions into cache.theta (one
// dispatch per kPhaseScanChunk positions; record_rfa_rotate records it itself).
constexpr uint32_t kPhaseScanChunk = 16384;
Status record_rfa_phase_scan(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                             AttentionCache& cache, const AttentionSpan& span);

// The two halves of record_rfa_attention, for tests and benchmarks. record_rfa_fused records the
// layer's mechanism's fused kernel (mechanisms/mechanism.hpp record_fused).
Status record_rfa_rotate(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& q_proj, const gpu::Buffer& k_proj,
                         const gpu::Buffer& v_proj, gpu::Buffer& v_norm_scratch, const AttentionSpan& span);
Status record_rfa_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                        const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                        const AttentionSpan& span);
// RFA's own fused kernel (and split-k reduce) for a resolved span: what RFA's mechanism records.
Status record_rfa_kernel(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                         const AttentionSpan& span);
// ... on a given tiling (the kernel check runs every path the chooser can take this way). The hooks
// make a deliberately wrong kernel, for the test that sees a failing path refused.
struct RecordTestHooks {
  bool flip_causal = false;  // the kernel's causal switch the opposite of the layer's
};
Status record_rfa_kernel(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                         const AttentionSpan& span, const AttentionTiling& t, const RecordTestHooks& hooks = {});

// Checks a span given as numbers against the cache (ring size, window, causality) and, for
// positions == nullptr, records {pos0, kv_len} into cache.span. Returns the buffer the kernels read.
Result<const gpu::Buffer*> prepare_span(gpu::Recorder& rec, AttentionCache& cache, const AttentionSpan& span,
                                        bool causal);

// Copies the new positions' (hi, lo) times [B, n_new] into their ring slots of `timestamps`
// [B, capacity] (slot (pos0 + i) % capacity, pos0 read from span.positions at run time).
Status record_timestamp_append(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& new_times,
                               gpu::Buffer& timestamps, uint32_t batch, uint32_t capacity, const AttentionSpan& span);

// Host helper: `n` complex components of a K or V cache as (re, im) floats: copied from fp32
// caches, unpacked from the packed fp16 pairs of kv_f16 caches (`raw` holds n * 8 or n * 4 bytes).
void kv_to_floats(const AttentionCache& cache, const void* raw, size_t n, float* out);

// Host helper: split a double timestamp into the (hi, lo) pair the kernels read (hi = float(t),
// lo = float(t - hi)); lags formed as (hi_i - hi_j) + (lo_i - lo_j) keep ~1e-7 relative to the lag.
void split_timestamp(double t, float* hi, float* lo);

}  // namespace rfa::ops
