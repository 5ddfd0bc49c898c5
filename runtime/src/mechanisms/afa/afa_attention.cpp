#include "mechanisms/afa/afa_attention.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "afa_layer_table.h"
#include "gpu/pipeline.hpp"
#include "kernel_ids.h"
#include "model/physics.hpp"
#include "push_layouts.h"

namespace rfa::ops {

using shader::AttentionPush;

Status check_afa_params(const AttentionParams& p) {
  const AfaLayerParams& f = p.afa;
  const size_t H = (size_t)p.heads, HD = H * (size_t)p.dim;
  auto bad = [](const std::string& what) { return make_error(Code::invalid_argument, "afa attention: " + what); };
  auto sized = [&](const std::vector<double>& v, size_t n, const char* name) -> Status {
    if (v.size() != n)
      return bad(std::string("params.afa.") + name + " holds " + std::to_string(v.size()) + " values, " +
                 std::to_string(n) + " expected");
    for (size_t k = 0; k < n; ++k)
      if (!std::isfinite(v[k])) return bad(std::string("params.afa.") + name + "[" + std::to_string(k) + "] is not finite");
    return Status::Ok();
  };
  RFA_TRY(sized(f.mu, HD, "mu"));
  RFA_TRY(sized(f.sigma2, HD, "sigma2"));
  RFA_TRY(sized(f.eta2, HD, "eta2"));
  RFA_TRY(sized(f.gamma2, HD, "gamma2"));
  RFA_TRY(sized(f.nu, H, "nu"));
  RFA_TRY(sized(f.alpha, H, "alpha"));
  if (f.mix) RFA_TRY(sized(f.delta, HD, "delta"));
  if (f.precision == AfaPrecision::weighted) {
    RFA_TRY(sized(f.weight, HD, "weight"));
    RFA_TRY(sized(f.weight_bias, H, "weight_bias"));
  }
  for (size_t k = 0; k < HD; ++k) {
    // Growing modes have no stationary covariance and overflow the transport (docs/variant-afa.md §10, decision 17).
    if (f.mu[k] < 0) return bad("params.afa.mu[" + std::to_string(k) + "] < 0 (a growing mode)");
    if (f.sigma2[k] < 0 || f.eta2[k] < 0 || f.gamma2[k] < 0)
      return bad("params.afa noise variances must be >= 0 (channel " + std::to_string(k) + ")");
    if (f.precision == AfaPrecision::weighted && f.weight[k] < 0)
      return bad("params.afa.weight[" + std::to_string(k) + "] < 0");
  }
  for (size_t h = 0; h < H; ++h) {
    if (!(f.nu[h] > 0)) return bad("params.afa.nu[" + std::to_string(h) + "] must be > 0");
    if (f.precision == AfaPrecision::weighted && f.weight_bias[h] < 0)
      return bad("params.afa.weight_bias[" + std::to_string(h) + "] < 0");
  }
  if (!(f.eps >= 0) || !std::isfinite(f.eps)) return bad("params.afa.eps must be finite and >= 0");
  if (!(f.pred_dt >= 0) || !std::isfinite(f.pred_dt)) return bad("params.afa.pred_dt must be finite and >= 0");
  if (f.precision != AfaPrecision::channel_sum && f.precision != AfaPrecision::one_channel &&
      f.precision != AfaPrecision::weighted)
    return bad("params.afa.precision is not a known source");
  if (f.precision == AfaPrecision::one_channel && (f.precision_channel < 0 || f.precision_channel >= p.dim))
    return bad("params.afa.precision_channel " + std::to_string(f.precision_channel) + " is not in [0, D = " +
               std::to_string(p.dim) + ")");
  if (f.irls_iterations < 1 || f.irls_iterations > kMaxAfaIrlsIterations)
    return bad("params.afa.irls_iterations " + std::to_string(f.irls_iterations) + " is not in [1, " +
               std::to_string(kMaxAfaIrlsIterations) + "]");
  if (!(f.irls_momentum >= 0 && f.irls_momentum < 1))
    return bad("params.afa.irls_momentum must be in [0, 1)");
  if (f.irls_iterations > 1 && !p.sw.causal)
    return bad("params.afa.irls_iterations > 1 needs a causal layer (a pass's caches hold its estimates at past "
               "positions only)");
  return Status::Ok();
}

std::vector<float> afa_layer_table(const AttentionParams& p) {
  using namespace shader;
  const AfaLayerParams& f = p.afa;
  const size_t H = (size_t)p.heads, HD = H * (size_t)p.dim;
  std::vector<float> t(4 * (kAfaBlocks * HD + H + 1), 0.f);
  for (size_t k = 0; k < HD; ++k) {
    const physics::AfaChannelDerived dv = physics::afa_channel_derived(p, k);
    float* a = &t[4 * k];
    a[kAfaMu] = (float)dv.mu;
    a[kAfaSigma2] = (float)f.sigma2[k];
    a[kAfaEta2] = (float)f.eta2[k];
    a[kAfaGamma2] = (float)f.gamma2[k];
    float* c = &t[4 * (HD + k)];
    c[kAfaMix] = (float)dv.mix;
    c[kAfaWeight] = f.precision == AfaPrecision::weighted ? (float)f.weight[k] : 0.f;
    c[kAfaPredRe] = (float)dv.prediction.real();
    c[kAfaPredIm] = (float)dv.prediction.imag();
  }
  for (size_t h = 0; h < H; ++h) {
    float* e = &t[4 * (kAfaBlocks * HD + h)];
    e[kAfaNu] = (float)f.nu[h];
    e[kAfaAlpha2] = (float)(f.alpha[h] * f.alpha[h]);
    e[kAfaWeightBias] = f.precision == AfaPrecision::weighted ? (float)f.weight_bias[h] : 0.f;
    e[kAfaEps] = (float)f.eps;
  }
  t[4 * (kAfaBlocks * HD + H) + kAfaMomentum] = (float)f.irls_momentum;
  return t;
}

uint32_t afa_shared_bytes(const AttentionTiling& t, uint32_t dim) {
  const uint32_t kv_tile = t.direct_kv ? 1 : t.keys_per_tile * dim;
  const uint32_t red = t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1;
  return 2 * kv_tile * 8 + t.keys_per_tile * 8 + t.workgroup * 8 + red * 8 + dim * 20;
}

AttentionTiling choose_direct_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                     uint32_t dim, uint32_t capacity, const char* kernel, const char* terms,
                                     uint32_t (*shared_bytes)(const AttentionTiling&, uint32_t)) {
  KernelOptions o = overrides;
  o.attention_tile = 0;
  o.attention_split_k = 0;
  o.attention_lag_table = 0;
  AttentionTiling t = choose_attention_tiling(caps, o, n_new, dim, 0, capacity, false);
  t.splits = 1;
  t.lag_table = false;
  t.tile = t.f16_math = t.coopmat = t.coopmat_emulated = false;
  t.groups_x = (n_new + t.rows_per_group - 1) / t.rows_per_group;
  while (t.keys_per_tile > 4 && shared_bytes(t, dim) > caps.max_shared_memory) t.keys_per_tile -= 4;
  t.shared_bytes = shared_bytes(t, dim);
  const bool cpu = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  t.why = std::string(cpu ? "CPU device: " : "GPU: ") + kernel + ", " +
          (t.direct_kv ? "keys read from the cache" : "key tiles of " + std::to_string(t.keys_per_tile) + " in shared memory") +
          (t.threads_per_row > 1 ? ", " + std::to_string(t.threads_per_row) + " threads per row (few rows)" : "") +
          ", " + terms;
  return t;
}

AttentionTiling choose_afa_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                  uint32_t dim, uint32_t capacity, bool full) {
  return choose_direct_tiling(caps, overrides, n_new, dim, capacity, full ? "full AFA kernel" : "AFA kernel",
                              full ? "every pair's per-channel decays and precisions from its lag, per-channel sums"
                                   : "every pair's per-channel decays from its lag",
                              afa_shared_bytes);
}

namespace {

// The per-cache buffers of an AFA layer (AttentionCache::mechanism_buffers), in this order: one
// scratch output (the bindings a pass leaves unwritten), the full form's normalisers den_k of every
// pass, then per pass p = 1..n-1 its queries (fp32), keys = values (the cache's precision), row
// maxima and sums, and with n > 1 the last iterate z~_{n+1} (fp32; what the last pass mixed, before
// the counter-rotation and the prediction). Made on the first call, for the cache's shape.
struct AfaBuffers {
  const AttentionCache& c;
  bool full;
  uint32_t passes;
  const gpu::Buffer& at(size_t k) const { return c.mechanism_buffers[k]; }
  const gpu::Buffer& scratch() const { return at(0); }
  const gpu::Buffer& den(uint32_t pass) const { return at(1 + pass); }
  size_t pass_base(uint32_t pass) const { return 1 + (full ? passes : 0) + 4 * (size_t)(pass - 1); }
  const gpu::Buffer& q(uint32_t pass) const { return pass == 0 ? c.q : at(pass_base(pass)); }
  const gpu::Buffer& k(uint32_t pass) const { return pass == 0 ? c.k : at(pass_base(pass) + 1); }
  const gpu::Buffer& v(uint32_t pass) const { return pass == 0 ? c.v : at(pass_base(pass) + 1); }
  const gpu::Buffer& row_max(uint32_t pass) const { return pass == 0 ? c.row_max : at(pass_base(pass) + 2); }
  const gpu::Buffer& row_sum(uint32_t pass) const { return pass == 0 ? c.row_sum : at(pass_base(pass) + 3); }
  const gpu::Buffer& last() const { return at(pass_base(passes)); }  // n > 1 only
  size_t count() const { return 1 + (full ? passes : 0) + 4 * (size_t)(passes - 1) + (passes > 1 ? 1 : 0); }
};

Status ensure_afa_buffers(gpu::Context& ctx, const AttentionParams& p, AttentionCache& c) {
  const AfaBuffers layout{c, p.variant == AttentionVariant::afa_full, (uint32_t)p.afa.irls_iterations};
  if (c.mechanism_buffers.size() == layout.count()) return Status::Ok();
  c.mechanism_buffers.clear();
  const uint64_t cells = (uint64_t)c.batch * c.heads * c.capacity;
  auto add = [&](uint64_t bytes, const std::string& what) -> Status {
    auto b = ctx.allocator().allocate(std::max<uint64_t>(bytes, 16), gpu::MemoryKind::device, "afa " + what);
    if (!b) return b.status();
    c.mechanism_buffers.push_back(b.take());
    return Status::Ok();
  };
  RFA_TRY(add(16, "scratch output"));
  for (uint32_t pass = 0; layout.full && pass < layout.passes; ++pass)
    RFA_TRY(add(cells * c.dim * 4, "normalisers of pass " + std::to_string(pass)));
  for (uint32_t pass = 1; pass < layout.passes; ++pass) {
    const std::string n = " of pass " + std::to_string(pass);
    RFA_TRY(add(cells * c.dim * 8, "queries" + n));
    RFA_TRY(add(cells * c.dim * c.kv_bytes_per_component(), "keys and values" + n));
    RFA_TRY(add(cells * 4, "row maxima" + n));
    RFA_TRY(add(cells * 4, "row sums" + n));
  }
  if (layout.passes > 1) RFA_TRY(add(cells * c.dim * 8, "last iterate"));
  return Status::Ok();
}

}  // namespace

const gpu::Buffer& afa_normalisers(const AttentionCache& c) { return c.mechanism_buffers.at(1); }

std::vector<AfaIterate> afa_iterates(const AttentionParams& p, const AttentionCache& c) {
  const AfaBuffers buf{c, p.variant == AttentionVariant::afa_full, (uint32_t)p.afa.irls_iterations};
  std::vector<AfaIterate> out;
  if (buf.passes < 2 || c.mechanism_buffers.size() != buf.count()) return out;
  out.push_back({&c.v, c.kv_f16});  // z_1 = V~
  for (uint32_t pass = 1; pass < buf.passes; ++pass) out.push_back({&buf.q(pass), false});
  out.push_back({&buf.last(), false});
  return out;
}

std::string afa_kernel_name(const AttentionParams& p, bool kv_f16) {
  return std::string(p.variant == AttentionVariant::afa_full ? "afa_full_attention" : "afa_attention") +
         (kv_f16 ? "_kv16" : "");
}

Status record_afa_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                        const gpu::Buffer& timestamps, gpu::Buffer& out, const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  const uint32_t H = (uint32_t)p.heads, D = (uint32_t)p.dim, B = cache.batch, n_new = span.n_new;
  if (n_new == 0) return Status::Ok();
  if (!span.positions) return make_error(Code::invalid_argument, "afa attention: the span needs its positions buffer");
  const uint64_t out_bytes = (uint64_t)B * n_new * 2 * H * D * 4;
  if (!out.valid() || out.size < out_bytes)
    return make_error(Code::invalid_argument, "afa attention: buffer 'out' holds " + std::to_string(out.size) +
                                                  " bytes, " + std::to_string(out_bytes) + " needed");
  RFA_TRY(ensure_afa_buffers(ctx, p, cache));
  const bool full = p.variant == AttentionVariant::afa_full;
  const AfaBuffers buf{cache, full, (uint32_t)p.afa.irls_iterations};
  const AttentionTiling t = choose_afa_tiling(ctx.caps(), ctx.kernels(), n_new, D, cache.capacity, full);
  using namespace shader;  // the ids: kernel_ids.h
  const AfaLayerParams& f = p.afa;
  const AttentionPush push{n_new, cache.capacity, H, cache.window, 0.f, 0u};
  // Tied iterations: one dispatch per pass, each over the caches of its own iterate (the recorder
  // orders them: a pass reads what the previous one wrote).
  for (uint32_t pass = 0; pass < buf.passes; ++pass) {
    const bool last = pass + 1 == buf.passes, momentum = pass > 0 && f.irls_momentum > 0;
    gpu::SpecConstants spec;
    spec.set(kAfaAttnWG, t.workgroup).set(kAfaAttnBQ, t.rows_per_group).set(kAfaAttnS, t.threads_per_row)
        .set(kAfaAttnBK, t.keys_per_tile).set(kAfaAttnD, D).set_flag(kAfaAttnCausal, p.sw.causal)
        .set_flag(kAfaAttnUnitary, f.unitary).set_flag(kAfaAttnMix, f.mix).set_flag(kAfaAttnDirectKv, t.direct_kv)
        .set(kAfaAttnKvTile, t.direct_kv ? 1 : t.keys_per_tile * D).set(kAfaAttnDC, t.merge_chunk)
        .set(kAfaAttnRED, t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1)
        .set(kAfaAttnStage, !last ? 1u : buf.passes > 1 ? 2u : 0u).set_flag(kAfaAttnMomentum, momentum)
        .set(kAfaAttnPrec, (uint32_t)f.precision).set(kAfaAttnPchan, (uint32_t)f.precision_channel);  // unused by the full form
    auto pipe = ctx.pipelines().get<AttentionPush>(afa_kernel_name(p, cache.kv_f16).c_str(), spec);
    if (!pipe) return pipe.status();
    std::vector<gpu::Binding> b = {gpu::in(w.table()),           gpu::in(w.omega()),          gpu::in(timestamps),
                                   gpu::in(buf.q(pass)),         gpu::in(buf.k(pass)),        gpu::in(buf.v(pass)),
                                   gpu::out(out),                gpu::inout(buf.row_max(pass)), gpu::inout(buf.row_sum(pass)),
                                   gpu::in(*span.positions),
                                   gpu::out(!last ? buf.q(pass + 1) : buf.passes > 1 ? buf.last() : buf.scratch()),
                                   gpu::out(last ? buf.scratch() : buf.k(pass + 1)),
                                   gpu::in(momentum ? buf.v(pass - 1) : w.table())};
    if (full) b.push_back(gpu::inout(buf.den(pass)));
    rec.dispatch(*pipe, b, push, t.groups_x, H, B, full ? "afa_full_attention" : "afa_attention");
  }
  return Status::Ok();
}

}  // namespace rfa::ops
