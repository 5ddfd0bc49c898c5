#include "ops/elementwise.hpp"

#include "gpu/pipeline.hpp"

namespace rfa::ops {

Status record_axpby(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& a, const gpu::Buffer& b,
                    const gpu::Buffer& y, uint32_t n, float alpha, float beta) {
  if (a.size < (uint64_t)n * 4 || b.size < (uint64_t)n * 4 || y.size < (uint64_t)n * 4)
    return Status(Code::invalid_argument, "axpby: buffer smaller than " + std::to_string(n) + " floats");
  auto pipe = ctx.pipelines().get("elementwise", 3, 12);
  if (!pipe) return pipe.status();
  struct {
    uint32_t n;
    float alpha, beta;
  } push{n, alpha, beta};
  // 128 invocations per workgroup; split across y when that needs more than the 65535 workgroups
  // every device guarantees in x.
  uint32_t groups = (n + 127) / 128, gx = groups, gy = 1;
  if (groups > 65535) {
    gx = 65535;
    gy = (groups + 65534) / 65535;
  }
  rec.dispatch(**pipe, {gpu::in(a), gpu::in(b), gpu::out(y)}, &push, gx, gy, 1, "axpby");
  return Status::Ok();
}

}  // namespace rfa::ops
