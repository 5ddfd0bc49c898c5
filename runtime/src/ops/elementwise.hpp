// y = alpha a + beta b (add, residual add, scale).
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"

namespace rfa::ops {

// n floats; b may equal a; with beta == 0, b is not read (pass a).
Status record_axpby(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& a, const gpu::Buffer& b,
                    const gpu::Buffer& y, uint32_t n, float alpha, float beta);

}  // namespace rfa::ops
