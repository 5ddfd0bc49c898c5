#include "ops/norm.hpp"

#include "gpu/pipeline.hpp"
#include "push_layouts.h"

namespace rfa::ops {

Status record_norm(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const gpu::Buffer& weight,
                   const gpu::Buffer* bias, const gpu::Buffer& y, uint32_t rows, uint32_t dim, float eps, bool rms) {
  if (x.size < (uint64_t)rows * dim * 4 || y.size < (uint64_t)rows * dim * 4 || weight.size < (uint64_t)dim * 4)
    return Status(Code::invalid_argument, "norm: buffer smaller than [" + std::to_string(rows) + "," + std::to_string(dim) + "]");
  gpu::SpecConstants spec;
  spec.flag(rms);  // constant_id 0: RMS
  auto pipe = ctx.pipelines().get<shader::NormPush>("layer_norm", spec);
  if (!pipe) return pipe.status();
  const shader::NormPush push{rows, dim, eps, bias ? 1u : 0u};
  rec.dispatch(*pipe, {gpu::in(x), gpu::in(weight), gpu::in(bias ? *bias : weight), gpu::out(y)}, push, rows, 1, 1,
               rms ? "rms_norm" : "layer_norm");
  return Status::Ok();
}

}  // namespace rfa::ops
