// RT-RFA layers on the GPU (directional RFA on the sphere, docs/variant-rt.md): the layer's
// parameter table and the fused kernel shaders/rt_attention*.comp. An RT layer goes through the
// same op as RFA (ops/rfa_attention.hpp): the rotate pass, in its UNIT mode, caches unit
// directions and log(m^2 + eps) per token, and record_rfa_fused hands the layer to its
// mechanism (rt_mechanism.cpp), which records record_rt_fused. Its tiling is the AFA kernel's
// direct path (mechanisms/afa/afa_attention.hpp).
#pragma once

#include <vector>

#include "ops/rfa_attention.hpp"

namespace rfa::ops {

// Checks an RT layer's parameters (sizes, signs, finiteness), naming the field at fault.
Status check_rt_params(const AttentionParams& p);

// The table the kernel reads (layout: shaders/common/rt_layer_table.h); kappa and S(0) are
// physics::rt_head_derived's.
std::vector<float> rt_layer_table(const AttentionParams& p);

// The kernel's shared memory for a tiling (what the shader declares).
uint32_t rt_shared_bytes(const AttentionTiling& t, uint32_t dim);

// How the RT kernel runs: the AFA kernel's direct path, key tiles shrunk to the device's shared
// memory; `why` names the RT kernel.
AttentionTiling choose_rt_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                 uint32_t dim, uint32_t capacity);

// The fused RT kernel for the span's new positions. v_unit: the unit values the rotate pass wrote
// (unrotated, [B*n_new, 2*H*D]).
Status record_rt_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                       const gpu::Buffer& timestamps, const gpu::Buffer& v_unit, gpu::Buffer& out,
                       const AttentionSpan& span);

}  // namespace rfa::ops
