// AFA layers on the GPU (Adaptive Filter Attention, memory-optimised form, docs/variant-afa.md; the
// full form of docs/variant-afa-full.md shares the table, the tiling and the passes):
// the layer's parameter table and the fused kernel shaders/afa_attention*.comp. An AFA layer goes
// through the same op as RFA (ops/rfa_attention.hpp): RFA's rotate pass fills the same caches
// (Q~, K~, V~ in the frame of omega_k t), and record_rfa_fused hands the layer to its mechanism
// (afa_mechanism.cpp), which records record_afa_fused. No lag table and no split-k or cooperative tile: per-channel decays make every
// pair's terms a function of D exponentials (docs/variant-afa.md §7).
#pragma once

#include <string>
#include <vector>

#include "ops/rfa_attention.hpp"

namespace rfa::ops {

// The most tied iterations an AFA layer may run (docs/variant-afa-full.md §3): each pass after the
// first keeps a cache of its own (queries, keys = values, row statistics), and a step runs every pass.
constexpr int kMaxAfaIrlsIterations = 16;

// Checks an AFA layer's parameters (sizes, signs, finiteness), naming the field at fault.
Status check_afa_params(const AttentionParams& p);

// The table the kernel reads (layout: shaders/common/afa_layer_table.h); the gate, the unitary
// switch's mu and e^{lambda h} are physics::afa_channel_derived's, in double.
std::vector<float> afa_layer_table(const AttentionParams& p);

// The kernel's shared memory for a tiling (what the shader declares).
uint32_t afa_shared_bytes(const AttentionTiling& t, uint32_t dim);

// How a kernel on common/direct_walk.glsl (AFA, RT-RFA) runs: RFA's direct-path choice (rows per
// group, threads per row, key tiles or keys read from the cache; no lag table, split-k or tile),
// key tiles shrunk until `shared_bytes` fits the device; `why` names `kernel` and its `terms`.
AttentionTiling choose_direct_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                     uint32_t dim, uint32_t capacity, const char* kernel, const char* terms,
                                     uint32_t (*shared_bytes)(const AttentionTiling&, uint32_t));

// How the AFA kernel runs: RFA's direct-path choice (rows per group, threads per row, key tiles or
// keys read from the cache), key tiles shrunk to the device's shared memory; `why` says so.
AttentionTiling choose_afa_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                  uint32_t dim, uint32_t capacity, bool full = false);

// The kernel of an AFA layer of either form: afa_attention or afa_full_attention, + "_kv16".
std::string afa_kernel_name(const AttentionParams& p, bool kv_f16);

// The fused AFA kernel of either form for the span's new positions (record_rfa_fused calls it for
// AFA layers): one dispatch per pass of the layer's tied iterations (docs/variant-afa-full.md §3),
// over the caches of each pass's iterate, which it makes in cache.mechanism_buffers on the first call.
Status record_afa_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                        const gpu::Buffer& timestamps, gpu::Buffer& out, const AttentionSpan& span);

// The iterates z~_1 .. z~_{n+1} of a layer with n > 1 tied iterations, in the caches' frame
// (e^{-i omega_k t}), [B, H, capacity, D] complex each: z~_1 = V~ (the cache's precision: packed
// fp16 pairs when `kv_f16`), the later ones fp32. Empty for n = 1 or before the first call.
struct AfaIterate {
  const gpu::Buffer* buffer;
  bool kv_f16;
};
std::vector<AfaIterate> afa_iterates(const AttentionParams& p, const AttentionCache& c);

// The full form's per-channel normalisers den_k of the first pass [B, H, capacity, D] (what its
// readouts divide by); valid once record_afa_fused has run on the cache.
const gpu::Buffer& afa_normalisers(const AttentionCache& c);

}  // namespace rfa::ops
