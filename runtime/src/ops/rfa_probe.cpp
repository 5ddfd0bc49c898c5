// The viewer's readouts of an attention layer: exact attention rectangles and row diagnostics of
// RFA, AFA and RT-RFA layers, and the GPU curves of RFA layers.
#include "ops/rfa_probe.hpp"

#include <string>

#include "gpu/pipeline.hpp"
#include "model/physics.hpp"
#include "push_layouts.h"

namespace rfa::ops {

namespace {

using shader::ProbePush;

Status check_probe(const AttentionWeightsGpu& w, const AttentionCache& c, uint32_t b, uint32_t head, uint32_t r0,
                   uint32_t r1) {
  if (c.heads != (uint32_t)w.params().heads || c.dim != (uint32_t)w.params().dim)
    return make_error(Code::invalid_argument, "rfa probe: cache heads/dim differ from the layer's");
  if (b >= c.batch || head >= c.heads)
    return make_error(Code::invalid_argument, "rfa probe: batch row " + std::to_string(b) + " / head " +
                                                  std::to_string(head) + " out of range");
  if (r0 > r1 || r1 > c.filled || r0 < c.oldest())
    return make_error(Code::invalid_argument, "rfa probe: rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                                                  ") not within positions [" + std::to_string(c.oldest()) + ", " +
                                                  std::to_string(c.filled) + ") still in the cache");
  return Status::Ok();
}

Result<const gpu::Pipeline*> probe_pipeline(gpu::Context& ctx, const AttentionParams& p, uint32_t mode, bool kv_f16) {
  const AttentionSwitches& sw = p.sw;
  // constant_id 0: D, 1: COV, 2: BIAS, 3: PREC, 4: ROBUST, 5: FULL_RESID, 6: CAUSAL, 7: MODE
  gpu::SpecConstants spec;
  spec.u32((uint32_t)p.dim).u32((uint32_t)sw.covariance).u32((uint32_t)sw.additive_bias).u32((uint32_t)sw.precision)
      .flag(sw.robust).flag(sw.full_residual).flag(sw.causal).u32(mode);
  return ctx.pipelines().get<ProbePush>(kv_f16 ? "rfa_probe_kv16" : "rfa_probe", spec);
}

// The rectangle (mode 0) or row diagnostics (mode 1) of an AFA layer (shaders/afa_probe.comp):
// AFA's pair logit against the row statistics the fused AFA kernel wrote; A is the mean decayed
// mass (docs/variant-afa.md §11).
Result<const gpu::Pipeline*> afa_probe_pipeline(gpu::Context& ctx, const AttentionParams& p, uint32_t mode, bool kv_f16) {
  const AfaLayerParams& f = p.afa;
  // constant_id 0: D, 1: CAUSAL, 2: PREC, 3: UNITARY, 4: PCHAN, 5: MODE
  gpu::SpecConstants spec;
  spec.u32((uint32_t)p.dim).flag(p.sw.causal).u32((uint32_t)f.precision).flag(f.unitary)
      .u32((uint32_t)f.precision_channel).u32(mode);
  return ctx.pipelines().get<ProbePush>(kv_f16 ? "afa_probe_kv16" : "afa_probe", spec);
}

// The rectangle (mode 0) or row diagnostics (mode 1) of an RT-RFA layer (shaders/rt_probe.comp):
// RT's pair logit against the row statistics the fused RT kernel wrote; A = Ahat (no decay on RT
// weights or values, docs/variant-rt.md §10).
Result<const gpu::Pipeline*> rt_probe_pipeline(gpu::Context& ctx, const AttentionParams& p, uint32_t mode, bool kv_f16) {
  // constant_id 0: D, 1: CAUSAL, 2: COV, 3: KERNEL, 4: MODE
  gpu::SpecConstants spec;
  spec.u32((uint32_t)p.dim).flag(p.sw.causal).u32((uint32_t)p.rt.covariance).u32((uint32_t)p.rt.kernel).u32(mode);
  return ctx.pipelines().get<ProbePush>(kv_f16 ? "rt_probe_kv16" : "rt_probe", spec);
}

// The dispatch of a probe shader in `mode` for the layer's mechanism, with its bindings: RFA's
// (head table, norms), AFA's (its layer table, no norms) or RT's (its table, log(m^2 + eps) in the
// norm slots). out0 gets Ahat or the row diagnostics, out1 A (unused in mode 1).
Status dispatch_probe(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const AttentionCache& c,
                      const gpu::Buffer& timestamps, uint32_t mode, const ProbePush& push, uint64_t threads,
                      gpu::Buffer& out0, gpu::Buffer& out1, const char* label) {
  const AttentionParams& p = w.params();
  const uint32_t groups = (uint32_t)((threads + 63) / 64);
  if (p.variant == AttentionVariant::afa) {
    auto pipe = afa_probe_pipeline(ctx, p, mode, c.kv_f16);
    if (!pipe) return pipe.status();
    rec.dispatch(**pipe,
                 {gpu::in(w.afa_table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(c.row_max),
                  gpu::in(c.row_sum), gpu::out(out0), gpu::out(out1)},
                 &push, groups, 1, 1, label);
    return Status::Ok();
  }
  if (p.variant == AttentionVariant::rt) {
    auto pipe = rt_probe_pipeline(ctx, p, mode, c.kv_f16);
    if (!pipe) return pipe.status();
    // q_norm2 / k_norm2 hold log(m^2 + eps) per token for RT layers (the rotate pass's UNIT mode).
    rec.dispatch(**pipe,
                 {gpu::in(w.rt_table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(c.q_norm2),
                  gpu::in(c.k_norm2), gpu::in(c.row_max), gpu::in(c.row_sum), gpu::out(out0), gpu::out(out1)},
                 &push, groups, 1, 1, label);
    return Status::Ok();
  }
  RFA_TRY(require_rfa_layer(p, mode == 0 ? "attention probe" : "row diagnostics probe"));  // no probe of its own
  auto pipe = probe_pipeline(ctx, p, mode, c.kv_f16);
  if (!pipe) return pipe.status();
  rec.dispatch(**pipe,
               {gpu::in(w.head_table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(c.q_norm2),
                gpu::in(c.k_norm2), gpu::in(c.row_max), gpu::in(c.row_sum), gpu::out(out0), gpu::out(out1)},
               &push, groups, 1, 1, label);
  return Status::Ok();
}

}  // namespace

Status record_rfa_probe(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const AttentionCache& c,
                        const gpu::Buffer& timestamps, uint32_t b, uint32_t head, uint32_t r0, uint32_t r1,
                        uint32_t c0, uint32_t c1, gpu::Buffer& ahat_out, gpu::Buffer& a_out) {
  RFA_TRY(check_probe(w, c, b, head, r0, r1));
  if (c0 > c1 || c1 > c.filled || c0 < c.oldest())
    return make_error(Code::invalid_argument, "rfa probe: columns not within the positions still in the cache");
  const uint64_t n = (uint64_t)(r1 - r0) * (c1 - c0);
  if (n == 0) return Status::Ok();
  if (ahat_out.size < n * 4 || a_out.size < n * 4)
    return make_error(Code::invalid_argument, "rfa probe: output buffers smaller than rows x cols floats");
  const ProbePush push{b, head, r0, r1, c0, c1, c.capacity, c.heads, c.filled, c.window, {0, 0, 0, 0}};
  const char* label = w.params().variant == AttentionVariant::afa  ? "afa_probe"
                      : w.params().variant == AttentionVariant::rt ? "rt_probe"
                                                                   : "rfa_probe";
  return dispatch_probe(ctx, rec, w, c, timestamps, 0, push, n, ahat_out, a_out, label);
}

Status record_rfa_row_diagnostics(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                  const AttentionCache& c, const gpu::Buffer& timestamps, uint32_t b, uint32_t head,
                                  uint32_t r0, uint32_t r1, const float thresholds[4], gpu::Buffer& out) {
  RFA_TRY(check_probe(w, c, b, head, r0, r1));
  const uint32_t rows = r1 - r0;
  if (rows == 0) return Status::Ok();
  if (out.size < (uint64_t)rows * 8 * 4)
    return make_error(Code::invalid_argument, "rfa row diagnostics: output smaller than rows x 8 floats");
  // Row i reads keys [first_key(i), i]: they must still be in the ring.
  const uint32_t first = c.window > 0 && r0 + 1 > c.window ? r0 + 1 - c.window : 0;
  if (w.params().sw.causal && first < c.oldest())
    return make_error(Code::invalid_argument, "rfa row diagnostics: row " + std::to_string(r0) +
                                                  " reads keys no longer in the cache (oldest position " +
                                                  std::to_string(c.oldest()) + ")");
  const ProbePush push{b, head, r0, r1, 0, 0, c.capacity, c.heads, c.filled, c.window,
                       {thresholds[0], thresholds[1], thresholds[2], thresholds[3]}};
  const char* label = w.params().variant == AttentionVariant::afa  ? "afa_row_diagnostics"
                      : w.params().variant == AttentionVariant::rt ? "rt_row_diagnostics"
                                                                   : "rfa_row_diagnostics";
  // The rectangle output is unused in this mode: `out` is bound there too (read by nobody).
  return dispatch_probe(ctx, rec, w, c, timestamps, 1, push, rows, out, out, label);
}

Status record_rfa_curves(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const gpu::Buffer& lags,
                         uint32_t n_lags, gpu::Buffer& out) {
  const AttentionParams& p = w.params();
  RFA_TRY(require_rfa_layer(p, "kernel curves"));
  const uint64_t n = (uint64_t)n_lags * p.heads;
  if (n == 0) return Status::Ok();
  if (lags.size < (uint64_t)n_lags * 4 || out.size < n * 4 * 4)
    return make_error(Code::invalid_argument, "rfa curves: lags must hold n_lags floats and out heads*4*n_lags");
  // constant_id 0: COV, 1: BIAS, 2: PREC
  gpu::SpecConstants spec;
  spec.u32((uint32_t)p.sw.covariance).u32((uint32_t)p.sw.additive_bias).u32((uint32_t)p.sw.precision);
  auto pipe = ctx.pipelines().get<shader::CurvesPush>("rfa_curves", spec);
  if (!pipe) return pipe.status();
  const shader::CurvesPush push{n_lags, (uint32_t)p.heads};
  rec.dispatch(**pipe, {gpu::in(w.head_table()), gpu::in(lags), gpu::out(out)}, &push, (uint32_t)((n + 63) / 64), 1, 1,
               "rfa_curves");
  return Status::Ok();
}

RegimeInfo rfa_regime(const AttentionParams& params, int head) { return physics::regime(params, head); }

}  // namespace rfa::ops
