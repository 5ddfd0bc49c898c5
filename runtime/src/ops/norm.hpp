// LayerNorm / RMSNorm over the last dimension.
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"

namespace rfa::ops {

// x, y: [rows, dim]; weight: [dim]; bias: [dim] or nullptr (RMSNorm has none).
Status record_norm(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const gpu::Buffer& weight,
                   const gpu::Buffer* bias, const gpu::Buffer& y, uint32_t rows, uint32_t dim, float eps,
                   bool rms);

}  // namespace rfa::ops
