#include "mechanisms/rt/rt_attention.hpp"

#include <cmath>
#include <string>

#include "gpu/pipeline.hpp"
#include "kernel_ids.h"
#include "mechanisms/afa/afa_attention.hpp"
#include "model/physics.hpp"
#include "push_layouts.h"
#include "rt_layer_table.h"

namespace rfa::ops {

using shader::AttentionPush;

Status check_rt_params(const AttentionParams& p) {
  const RtLayerParams& r = p.rt;
  const size_t H = (size_t)p.heads;
  auto bad = [](const std::string& what) { return make_error(Code::invalid_argument, "rt attention: " + what); };
  const std::pair<const std::vector<double>*, const char*> fields[] = {
      {&r.mu, "mu"},         {&r.s2t, "s2t"},         {&r.sigma2, "sigma2"}, {&r.eta2, "eta2"},
      {&r.gamma2, "gamma2"}, {&r.tau_th2, "tau_th2"}, {&r.nu, "nu"},         {&r.beta, "beta"}};
  for (const auto& [v, name] : fields) {
    if (v->size() != H)
      return bad(std::string("params.rt.") + name + " holds " + std::to_string(v->size()) + " values, " +
                 std::to_string(H) + " expected");
    for (size_t h = 0; h < H; ++h) {
      const double x = (*v)[h];
      // tau_th2, nu and beta_s must be > 0 (tau_th2 bounds P); the others >= 0.
      const bool positive = v == &r.tau_th2 || v == &r.nu || v == &r.beta;
      if (!std::isfinite(x) || x < 0 || (positive && x == 0))
        return bad(std::string("params.rt.") + name + "[" + std::to_string(h) + "] = " + std::to_string(x) +
                   (positive ? ": must be finite and > 0" : ": must be finite and >= 0"));
    }
  }
  if (!(r.eps >= 0) || !std::isfinite(r.eps)) return bad("params.rt.eps must be finite and >= 0");
  if (r.covariance != RtCovariance::stationary && r.covariance != RtCovariance::ou_rate)
    return bad("params.rt.covariance is not a known form");
  if (r.kernel != RtKernel::student_t && r.kernel != RtKernel::gaussian) return bad("params.rt.kernel is not a known kernel");
  return Status::Ok();
}

std::vector<float> rt_layer_table(const AttentionParams& p) {
  using namespace shader;
  const RtLayerParams& r = p.rt;
  std::vector<float> t(kRtHeadStride * (size_t)p.heads, 0.f);
  for (size_t h = 0; h < (size_t)p.heads; ++h) {
    const physics::RtHeadDerived dv = physics::rt_head_derived(p, (int)h);
    float* x = &t[kRtHeadStride * h];
    x[kRtMu] = (float)r.mu[h];
    x[kRtS2t] = (float)r.s2t[h];
    x[kRtSigma2] = (float)r.sigma2[h];
    x[kRtEta2] = (float)r.eta2[h];
    x[kRtGamma2] = (float)r.gamma2[h];
    x[kRtTauTh2] = (float)r.tau_th2[h];
    x[kRtNu] = (float)r.nu[h];
    x[kRtKappa] = (float)dv.kappa;
    x[kRtBetaS] = (float)r.beta[h];
    x[kRtS0] = (float)dv.S0;
  }
  return t;
}

uint32_t rt_shared_bytes(const AttentionTiling& t, uint32_t dim) {
  const uint32_t kv_tile = t.direct_kv ? 1 : t.keys_per_tile * dim;
  const uint32_t red = t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1;
  return 2 * kv_tile * 8 + t.keys_per_tile * 12 + t.workgroup * 8 + red * 8;
}

AttentionTiling choose_rt_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                 uint32_t dim, uint32_t capacity) {
  return choose_direct_tiling(caps, overrides, n_new, dim, capacity, "RT-RFA kernel",
                              "log-domain precision from each pair's lag", rt_shared_bytes);
}

Status record_rt_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                       const gpu::Buffer& timestamps, const gpu::Buffer& v_unit, gpu::Buffer& out,
                       const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  const uint32_t H = (uint32_t)p.heads, D = (uint32_t)p.dim, B = cache.batch, n_new = span.n_new;
  if (n_new == 0) return Status::Ok();
  if (!span.positions) return make_error(Code::invalid_argument, "rt attention: the span needs its positions buffer");
  const uint64_t bytes = (uint64_t)B * n_new * 2 * H * D * 4;
  for (const auto& [b, name] : {std::pair<const gpu::Buffer*, const char*>{&out, "out"}, {&v_unit, "v_unit"}})
    if (!b->valid() || b->size < bytes)
      return make_error(Code::invalid_argument, std::string("rt attention: buffer '") + name + "' holds " +
                                                    std::to_string(b->size) + " bytes, " + std::to_string(bytes) +
                                                    " needed");
  const AttentionTiling t = choose_rt_tiling(ctx.caps(), ctx.kernels(), n_new, D, cache.capacity);
  using namespace shader;  // the ids: kernel_ids.h
  gpu::SpecConstants spec;
  spec.set(kRtAttnWG, t.workgroup).set(kRtAttnBQ, t.rows_per_group).set(kRtAttnS, t.threads_per_row).set(kRtAttnBK, t.keys_per_tile)
      .set(kRtAttnD, D).set_flag(kRtAttnCausal, p.sw.causal).set(kRtAttnCov, (uint32_t)p.rt.covariance)
      .set(kRtAttnKernel, (uint32_t)p.rt.kernel).set_flag(kRtAttnDirectKv, t.direct_kv)
      .set(kRtAttnKvTile, t.direct_kv ? 1 : t.keys_per_tile * D).set(kRtAttnDC, t.merge_chunk)
      .set(kRtAttnRED, t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1);
  auto pipe = ctx.pipelines().get<AttentionPush>(cache.kv_f16 ? "rt_attention_kv16" : "rt_attention", spec);
  if (!pipe) return pipe.status();
  const AttentionPush push{n_new, cache.capacity, H, cache.window, 0.f, 0u};
  rec.dispatch(*pipe,
               {gpu::in(w.table()), gpu::in(w.omega()), gpu::in(timestamps), gpu::in(cache.q), gpu::in(cache.k),
                gpu::in(cache.v), gpu::in(cache.q_norm2), gpu::in(cache.k_norm2), gpu::in(v_unit), gpu::out(out),
                gpu::inout(cache.row_max), gpu::inout(cache.row_sum), gpu::in(*span.positions)},
               push, t.groups_x, H, B, "rt_attention");
  return Status::Ok();
}

}  // namespace rfa::ops
