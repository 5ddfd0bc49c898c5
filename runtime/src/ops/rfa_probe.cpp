// The viewer's readouts of an attention layer: exact attention rectangles and row diagnostics of
// RFA, AFA and RT-RFA layers, and the GPU curves of RFA layers.
#include "ops/rfa_probe.hpp"

#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "mechanisms/mechanism.hpp"
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

// The dispatch of the layer's mechanism's probe shader (<key>_probe) in `mode`: its readout
// inputs, then the row statistics and the outputs. out0 gets Ahat or the row diagnostics, out1 A
// (unused in mode 1).
Status dispatch_probe(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const AttentionCache& c,
                      const gpu::Buffer& timestamps, uint32_t mode, const ProbePush& push, uint64_t threads,
                      gpu::Buffer& out0, gpu::Buffer& out1, int view) {
  const mech::Mechanism& m = mech::mechanism_of(w.params());
  RFA_TRY(m.check_view(w.params(), view));
  const gpu::SpecConstants spec = m.readout_spec(w.params(), mode, view);
  const std::string kernel = std::string(m.key()) + "_probe";
  auto pipe = ctx.pipelines().get<ProbePush>((c.kv_f16 ? kernel + "_kv16" : kernel).c_str(), spec);
  if (!pipe) return pipe.status();
  std::vector<gpu::Binding> bindings = m.readout_inputs(w, c, timestamps);
  bindings.insert(bindings.end(), {gpu::in(c.row_max), gpu::in(c.row_sum), gpu::out(out0), gpu::out(out1)});
  const std::string label = std::string(m.key()) + (mode == 0 ? "_probe" : "_row_diagnostics");
  rec.dispatch(*pipe, bindings, push, gpu::workgroups(threads, 64), 1, 1, label.c_str());
  return Status::Ok();
}

}  // namespace

Status record_rfa_probe(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const AttentionCache& c,
                        const gpu::Buffer& timestamps, uint32_t b, uint32_t head, uint32_t r0, uint32_t r1,
                        uint32_t c0, uint32_t c1, gpu::Buffer& ahat_out, gpu::Buffer& a_out, int view) {
  RFA_TRY(check_probe(w, c, b, head, r0, r1));
  if (c0 > c1 || c1 > c.filled || c0 < c.oldest())
    return make_error(Code::invalid_argument, "rfa probe: columns not within the positions still in the cache");
  const uint64_t n = (uint64_t)(r1 - r0) * (c1 - c0);
  if (n == 0) return Status::Ok();
  if (ahat_out.size < n * 4 || a_out.size < n * 4)
    return make_error(Code::invalid_argument, "rfa probe: output buffers smaller than rows x cols floats");
  const ProbePush push{b, head, r0, r1, c0, c1, c.capacity, c.heads, c.filled, c.window, {0, 0, 0, 0}};
  return dispatch_probe(ctx, rec, w, c, timestamps, 0, push, n, ahat_out, a_out, view);
}

Status record_rfa_row_diagnostics(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                  const AttentionCache& c, const gpu::Buffer& timestamps, uint32_t b, uint32_t head,
                                  uint32_t r0, uint32_t r1, const float thresholds[4], gpu::Buffer& out,
                                  int view) {
  RFA_TRY(check_probe(w, c, b, head, r0, r1));
  if (view == kReweighting)
    return make_error(Code::invalid_argument, "rfa row diagnostics: the reweighting map W is not normalised; its "
                                              "rows have no entropy (use a channel or kAllChannels)");
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
  // The rectangle output is unused in this mode: `out` is bound there too (read by nobody).
  return dispatch_probe(ctx, rec, w, c, timestamps, 1, push, rows, out, out, view);
}

Status record_rfa_curves(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const gpu::Buffer& lags,
                         uint32_t n_lags, gpu::Buffer& out) {
  return mech::mechanism_of(w.params()).record_curves(ctx, rec, w, lags, n_lags, out);
}

RegimeInfo rfa_regime(const AttentionParams& params, int head) { return physics::regime(params, head); }

}  // namespace rfa::ops
