#include "ops/linear.hpp"

#include "gpu/pipeline.hpp"

namespace rfa::ops {

LinearParams choose_linear_params(const gpu::Capabilities& caps, const LinearShape& s) {
  LinearParams p;
  // Below 8 rows a 64-row tile is mostly padding; the GEMV kernel streams W once per row instead.
  if (s.rows < 8) {
    p.kernel = LinearParams::Kernel::gemv;
    p.groups_x = (s.out + 3) / 4;
    p.groups_y = s.rows;
  } else {
    p.groups_x = (s.out + 63) / 64;
    p.groups_y = (s.rows + 63) / 64;
  }
  (void)caps;
  return p;
}

Status record_linear(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const gpu::Buffer& w,
                     const gpu::Buffer* bias, const gpu::Buffer& y, const LinearShape& s, const LinearOptions& opt) {
  const uint64_t xs = (uint64_t)s.rows * s.in * 4, ws = (uint64_t)s.out * s.in * 4, ys = (uint64_t)s.rows * s.out * 4;
  if (x.size < xs || w.size < ws || y.size < ys || (bias && bias->size < (uint64_t)s.out * 4))
    return Status(Code::invalid_argument, "linear: buffer smaller than its shape [" + std::to_string(s.rows) + "," +
                                              std::to_string(s.in) + "] -> " + std::to_string(s.out));
  if (xs / 4 >= (1ull << 32) || ws / 4 >= (1ull << 32) || ys / 4 >= (1ull << 32))
    return Status(Code::unsupported, "linear: a tensor has 2^32 or more elements (32-bit indexing)");
  LinearParams p = choose_linear_params(ctx.caps(), s);
  // constant_id 0: RELU, 1: ACCUMULATE (same in both kernels)
  gpu::SpecConstants spec;
  spec.flag(opt.relu).flag(opt.accumulate);
  auto pipe = ctx.pipelines().get(p.kernel == LinearParams::Kernel::gemv ? "linear_gemv" : "linear", 4, 16, spec);
  if (!pipe) return pipe.status();
  struct {
    uint32_t M, N, K, has_bias;
  } push{s.rows, s.out, s.in, bias ? 1u : 0u};
  // Without a bias the slot is bound to W (never read) so every binding stays valid.
  rec.dispatch(**pipe, {gpu::in(x), gpu::in(w), gpu::in(bias ? *bias : w), opt.accumulate ? gpu::inout(y) : gpu::out(y)},
               &push, p.groups_x, p.groups_y, 1, "linear");
  return Status::Ok();
}

}  // namespace rfa::ops
