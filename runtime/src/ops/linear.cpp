#include "ops/linear.hpp"

#include <vector>

#include "gpu/pipeline.hpp"
#include "push_layouts.h"

namespace rfa::ops {

LinearParams choose_linear_params(const gpu::Capabilities& caps, const KernelOptions& overrides, const LinearShape& s) {
  LinearParams p;
  // KernelOptions::linear = tiled|gemv|direct overrides the choice (to compare kernels on one device).
  const std::string& f = overrides.linear;
  // The 16x16 tiled kernel needs 256 invocations per workgroup; the spec guarantees only 128, so a
  // device below 256 takes the 64-invocation direct kernel instead.
  const bool cpu = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU, small_wg = caps.max_workgroup_invocations < 256;
  if (f == "direct" || (f.empty() && (cpu || small_wg))) {
    p.kernel = LinearParams::Kernel::direct;
    if (s.rows < 4) {  // 64x1 invocations of 1x4 blocks: 1 row x 256 columns per workgroup
      p.rows_per_invocation = 1;
      p.local_x = 64;
      p.local_y = 1;
      p.groups_x = (s.out + 255) / 256;
      p.groups_y = s.rows;
    } else {  // 8x8 invocations of 4x4 blocks: 32x32 per workgroup
      p.groups_x = (s.out + 31) / 32;
      p.groups_y = (s.rows + 31) / 32;
    }
  } else if (f == "gemv" || (f.empty() && s.rows < 8)) {
    // Below 8 rows a 64-row tile is mostly padding; the GEMV kernel streams W once per row instead.
    p.kernel = LinearParams::Kernel::gemv;
    p.groups_x = (s.out + 3) / 4;
    p.groups_y = s.rows;
  } else {
    p.groups_x = gpu::workgroups(s.out, 64);
    p.groups_y = gpu::workgroups(s.rows, 64);
  }
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
  LinearParams p = choose_linear_params(ctx.caps(), ctx.kernels(), s);
  // constant_id 0: RELU, 1: ACCUMULATE (the same in every linear kernel); the direct kernel adds
  // 2: rows per invocation, 3 and 4: workgroup width and height.
  gpu::SpecConstants spec;
  spec.flag(opt.relu).flag(opt.accumulate);
  if (p.kernel == LinearParams::Kernel::direct) spec.u32(p.rows_per_invocation).u32(p.local_x).u32(p.local_y);
  const char* shader = p.kernel == LinearParams::Kernel::gemv         ? "linear_gemv"
                       : p.kernel == LinearParams::Kernel::direct ? "linear_direct"
                                                                  : "linear";
  auto pipe = ctx.pipelines().get<shader::LinearPush>(shader, spec);
  if (!pipe) return pipe.status();
  const shader::LinearPush push{s.rows, s.out, s.in, bias ? 1u : 0u};
  // Without a bias the slot is bound to W (never read) so every binding stays valid.
  rec.dispatch(*pipe, {gpu::in(x), gpu::in(w), gpu::in(bias ? *bias : w), opt.accumulate ? gpu::inout(y) : gpu::out(y)},
               push, p.groups_x, p.groups_y, 1, "linear");
  return Status::Ok();
}

Status record_linear(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& x, const LinearGpu& w,
                     const gpu::Buffer& y, uint32_t rows, const LinearOptions& opt) {
  return record_linear(ctx, rec, x, w.weight, w.has_bias ? &w.bias : nullptr, y, {rows, w.in, w.out}, opt);
}

Result<LinearGpu> LinearGpu::create(gpu::Context& ctx, const LinearWeights& lw, const std::string& label) {
  LinearGpu g;
  g.in = (uint32_t)lw.in;
  g.out = (uint32_t)lw.out;
  if (lw.weight.data.size() != (size_t)lw.in * lw.out)
    return Status(Code::invalid_argument, label + ".weight: " + std::to_string(lw.weight.data.size()) +
                                              " values for a [" + std::to_string(lw.out) + "," + std::to_string(lw.in) + "] matrix");
  auto w = ctx.allocator().allocate(lw.weight.data.size() * 4, gpu::MemoryKind::device, label + ".weight");
  if (!w) return w.status();
  g.weight = w.take();
  RFA_TRY(ctx.upload(g.weight, lw.weight.data.data(), lw.weight.data.size() * 4));
  if (!lw.bias.data.empty()) {
    auto b = ctx.allocator().allocate(lw.bias.data.size() * 4, gpu::MemoryKind::device, label + ".bias");
    if (!b) return b.status();
    g.bias = b.take();
    g.has_bias = true;
    RFA_TRY(ctx.upload(g.bias, lw.bias.data.data(), lw.bias.data.size() * 4));
  }
  return g;
}

}  // namespace rfa::ops
