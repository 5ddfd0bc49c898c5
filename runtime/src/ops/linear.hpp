// Linear y = x W^T + b on the GPU: carries every projection and FFN of the model.
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "model/model.hpp"

namespace rfa::ops {

struct LinearShape {
  uint32_t rows = 0;  // M: tokens (times batch)
  uint32_t in = 0;    // K
  uint32_t out = 0;   // N
};

struct LinearOptions {
  bool relu = false;        // fused ReLU after the bias
  bool accumulate = false;  // y += x W^T + b (fused residual add)
};

// Which kernel serves a shape and layout.
struct LinearParams {
  enum class Kernel { tiled, gemv, direct } kernel = Kernel::tiled;
  uint32_t groups_x = 1, groups_y = 1;
  uint32_t rows_per_invocation = 4, local_x = 8, local_y = 8;  // direct kernel only
};
LinearParams choose_linear_params(const gpu::Capabilities& caps, const KernelOptions& overrides, const LinearShape& s);

// A Linear layer's weights on the device ([out, in] as PyTorch stores them, and the bias).
struct LinearGpu {
  gpu::Buffer weight, bias;
  uint32_t in = 0, out = 0;
  bool has_bias = false;
  static Result<LinearGpu> create(gpu::Context& ctx, const LinearWeights& w, const std::string& label);
};

// x: [rows, in], w: [out, in], bias: [out] or nullptr, y: [rows, out].
Status record_linear(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const gpu::Buffer& w,
                     const gpu::Buffer* bias, const gpu::Buffer& y, const LinearShape& shape,
                     const LinearOptions& opt = {});
Status record_linear(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const LinearGpu& w,
                     const gpu::Buffer& y, uint32_t rows, const LinearOptions& opt = {});

}  // namespace rfa::ops
