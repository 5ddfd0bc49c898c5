// The GPU half of the attention tomography: the layer's mechanism's kernel (<key>_tomography:
// rfa_, afa_, rt_tomography; shaders/variants.cmake), mode 0 (row statistics
// at a temperature) and mode 1 (the matrix P(alpha) of a rectangle).
#include "ops/rfa_tomography.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "mechanisms/mechanism.hpp"
#include "push_layouts.h"

namespace rfa::ops {

namespace {

using shader::TomographyPush;

// The layer's mechanism's tomography shader (<key>_tomography) in `mode`.
Result<gpu::Kernel<TomographyPush>> tomography_pipeline(gpu::Context& ctx, const AttentionParams& p, uint32_t mode,
                                                        bool kv_f16, int view) {
  const mech::Mechanism& m = mech::mechanism_of(p);
  RFA_TRY(m.check_view(p, view));
  const gpu::SpecConstants spec = m.readout_spec(p, mode, view);
  const std::string kernel = std::string(m.key()) + "_tomography";
  return ctx.pipelines().get<TomographyPush>((kv_f16 ? kernel + "_kv16" : kernel).c_str(), spec);
}

// The shader's bindings: the mechanism's readout inputs (its table, the timestamps, Q~ and K~ and
// the per-token norms where it reads them), then the row statistics and the matrix.
std::vector<gpu::Binding> tomography_bindings(const AttentionWeightsGpu& w, const AttentionCache& c,
                                              const gpu::Buffer& timestamps, gpu::Binding rows, gpu::Binding mat) {
  std::vector<gpu::Binding> b = mech::mechanism_of(w.params()).readout_inputs(w, c, timestamps);
  b.insert(b.end(), {rows, mat});
  return b;
}

std::string range(uint32_t a, uint32_t b) {
  std::string s = "[";  // built step by step: GCC 12's -Wrestrict misfires on "[" + to_string(a) + ...
  s += std::to_string(a);
  s += ", ";
  s += std::to_string(b);
  s += ")";
  return s;
}

// Rows must be in the ring; a causal row's whole band must be too (it reads every key of it).
Status check_rows(const AttentionWeightsGpu& w, const AttentionCache& c, uint32_t b, uint32_t head, uint32_t r0,
                  uint32_t r1, float alpha) {
  if (c.heads != (uint32_t)w.params().heads || c.dim != (uint32_t)w.params().dim)
    return make_error(Code::invalid_argument, "rfa tomography: cache heads/dim differ from the layer's");
  if (b >= c.batch || head >= c.heads)
    return make_error(Code::invalid_argument, "rfa tomography: batch row " + std::to_string(b) + " / head " +
                                                  std::to_string(head) + " out of range");
  if (!(alpha > 0.0f) || !std::isfinite(alpha))
    return make_error(Code::invalid_argument, "rfa tomography: alpha " + std::to_string(alpha) +
                                                  " must be finite and > 0");
  if (r0 >= r1 || r1 > c.filled || r0 < c.oldest())
    return make_error(Code::invalid_argument, "rfa tomography: rows " + range(r0, r1) +
                                                  " empty or not within positions " + range(c.oldest(), c.filled) +
                                                  " still in the cache");
  if (w.params().sw.causal) {
    const uint32_t first = c.window > 0 && r0 + 1 > c.window ? r0 + 1 - c.window : 0;
    if (first < c.oldest())
      return make_error(Code::invalid_argument, "rfa tomography: row " + std::to_string(r0) +
                                                    " reads keys no longer in the cache (oldest position " +
                                                    std::to_string(c.oldest()) + ")");
  } else if (c.oldest() > 0) {
    return make_error(Code::invalid_argument, "rfa tomography: a non-causal row reads every key, but positions [0, " +
                                                  std::to_string(c.oldest()) + ") have left the cache");
  }
  return Status::Ok();
}

}  // namespace

Status record_rfa_tomography_rows(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                  const AttentionCache& c, const gpu::Buffer& timestamps, uint32_t b, uint32_t head,
                                  uint32_t r0, uint32_t r1, float alpha, gpu::Buffer& rows_out, int view) {
  RFA_TRY(check_rows(w, c, b, head, r0, r1, alpha));
  const uint32_t rows = r1 - r0;
  if (rows_out.size < (uint64_t)rows * kTomographyRowStride * 4)
    return make_error(Code::invalid_argument, "rfa tomography: row output smaller than rows x " +
                                                  std::to_string(kTomographyRowStride) + " floats");
  auto pipe = tomography_pipeline(ctx, w.params(), 0, c.kv_f16, view);
  if (!pipe) return pipe.status();
  // One workgroup per row, at most 65535 per dispatch (the minimum Vulkan guarantees).
  for (uint32_t first = 0; first < rows; first += 65535) {
    TomographyPush push{b, head, r0, r1, 0, 0, c.capacity, c.heads, c.filled, c.window, alpha, 0, first};
    // The matrix binding is unused in this mode: the row output is bound there too.
    rec.dispatch(*pipe, tomography_bindings(w, c, timestamps, gpu::out(rows_out), gpu::out(rows_out)), push,
                 std::min<uint32_t>(rows - first, 65535), 1, 1, "rfa_tomography_rows");
  }
  return Status::Ok();
}

Status record_rfa_tomography_matrix(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                    const AttentionCache& c, const gpu::Buffer& timestamps, uint32_t b,
                                    uint32_t head, uint32_t r0, uint32_t r1, uint32_t c0, uint32_t c1, float alpha,
                                    bool decayed, const gpu::Buffer& rows_in, gpu::Buffer& p_out, int view) {
  RFA_TRY(check_rows(w, c, b, head, r0, r1, alpha));
  if (c0 >= c1 || c1 > c.filled || c0 < c.oldest())
    return make_error(Code::invalid_argument, "rfa tomography: columns " + range(c0, c1) +
                                                  " empty or not within positions " + range(c.oldest(), c.filled) +
                                                  " still in the cache");
  const uint64_t rows = r1 - r0, cells = rows * (c1 - c0);
  if (rows_in.size < rows * kTomographyRowStride * 4 || p_out.size < cells * 4)
    return make_error(Code::invalid_argument, "rfa tomography: row statistics or matrix buffer too small");
  // One thread per cell in a 1-D grid: at most 65535 groups of 64 (the minimum Vulkan guarantees).
  if (cells > 65535ull * 64)
    return make_error(Code::invalid_argument, "rfa tomography: rectangle of " + std::to_string(cells) +
                                                  " cells exceeds the 65535 x 64 cells of one dispatch");
  auto pipe = tomography_pipeline(ctx, w.params(), 1, c.kv_f16, view);
  if (!pipe) return pipe.status();
  TomographyPush push{b, head, r0, r1, c0, c1, c.capacity, c.heads, c.filled, c.window, alpha, decayed ? 1u : 0u, 0};
  rec.dispatch(*pipe, tomography_bindings(w, c, timestamps, gpu::in(rows_in), gpu::out(p_out)), push,
               gpu::workgroups(cells, 64), 1, 1, "rfa_tomography_matrix");
  return Status::Ok();
}

}  // namespace rfa::ops
