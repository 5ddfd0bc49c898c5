// Session probes: what the viewer and tools read of a running session. All of them recompute from
// the per-layer caches (rotated Q/K, norms, row statistics); nothing is kept per pair.
#include <algorithm>
#include <cmath>
#include <complex>

#include "ops/rfa_attention.hpp"
#include "probe/heatmap_render.hpp"
#include "reference/attention_ref.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::LayerGpu;

Result<std::vector<float>> Session::attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed) {
  Impl& I = *impl_;
  RFA_TRY(I.check_probe(layer, head, b, r0, r1, c0, c1));
  const uint64_t cells = (uint64_t)(r1 - r0) * (uint64_t)(c1 - c0);
  auto ahat = I.g->allocator().allocate(cells * 4, gpu::MemoryKind::device, "probe Ahat");
  if (!ahat) return ahat.status();
  auto a = I.g->allocator().allocate(cells * 4, gpu::MemoryKind::device, "probe A");
  if (!a) return a.status();
  LayerGpu& L = I.layers[(size_t)layer];
  gpu::Recorder rec(*I.g);
  RFA_TRY(rec.begin());
  Status s = ops::record_rfa_probe(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head, (uint32_t)r0,
                                   (uint32_t)r1, (uint32_t)c0, (uint32_t)c1, *ahat, *a);
  Status s2 = rec.submit_and_wait();
  RFA_TRY(s);
  RFA_TRY(s2);
  std::vector<float> out(cells);
  RFA_TRY(I.g->download(decayed ? *a : *ahat, out.data(), cells * 4));
  return out;
}

Result<std::vector<RowDiagnostics>> Session::row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                             const double thresholds[4]) {
  Impl& I = *impl_;
  RFA_TRY(I.check_probe(layer, head, b, r0, r1, 0, std::max(1, I.filled)));
  const uint32_t rows = (uint32_t)(r1 - r0);
  auto buf = I.g->allocator().allocate((uint64_t)rows * 8 * 4, gpu::MemoryKind::device, "row diagnostics");
  if (!buf) return buf.status();
  float th[4];
  for (int i = 0; i < 4; ++i) th[i] = (float)thresholds[i];
  LayerGpu& L = I.layers[(size_t)layer];
  gpu::Recorder rec(*I.g);
  RFA_TRY(rec.begin());
  Status s = ops::record_rfa_row_diagnostics(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head,
                                             (uint32_t)r0, (uint32_t)r1, th, *buf);
  Status s2 = rec.submit_and_wait();
  RFA_TRY(s);
  RFA_TRY(s2);
  std::vector<float> raw((size_t)rows * 8);
  RFA_TRY(I.g->download(*buf, raw.data(), raw.size() * 4));
  std::vector<RowDiagnostics> out(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const float* p = &raw[(size_t)r * 8];
    out[r].entropy = p[0];
    out[r].log_partition = p[1];
    out[r].max_weight = p[2];
    out[r].expected_lag = p[3];
    for (int i = 0; i < 4; ++i) out[r].mass_beyond[i] = p[4 + i];
  }
  return out;
}

Result<PairReadout> Session::pair(int layer, int head, int b, int i, int j) {
  Impl& I = *impl_;
  RFA_TRY(I.check_probe(layer, head, b, i, i + 1, j, j + 1));
  const AttentionParams& p = I.model->layer(layer).params;
  const LayerGpu& L = I.layers[(size_t)layer];
  const size_t D = (size_t)p.dim, row = ((size_t)b * p.heads + head) * (size_t)I.capacity;
  std::vector<float> q(2 * D), k(2 * D);
  float m = 0, l = 0;
  RFA_TRY(I.g->download(L.cache.q, q.data(), D * 8, (row + (size_t)i) * D * 8));
  RFA_TRY(I.g->download(L.cache.k, k.data(), D * 8, (row + (size_t)j) * D * 8));
  RFA_TRY(I.g->download(L.cache.row_max, &m, 4, (row + (size_t)i) * 4));
  RFA_TRY(I.g->download(L.cache.row_sum, &l, 4, (row + (size_t)i) * 4));
  const double ti = I.host_t[(size_t)b][(size_t)i], tj = I.host_t[(size_t)b][(size_t)j];
  // The caches hold Q~ = Q e^{-i omega t}; the twin's pair_terms takes Q, K at their own times.
  std::vector<std::complex<double>> qv(D), kv(D);
  for (size_t d = 0; d < D; ++d) {
    const double w = p.omega[(size_t)head * D + d];
    qv[d] = std::complex<double>(q[2 * d], q[2 * d + 1]) * std::polar(1.0, w * ti);
    kv[d] = std::complex<double>(k[2 * d], k[2 * d + 1]) * std::polar(1.0, w * tj);
  }
  const ref::PairTerms t = ref::pair_terms(p, head, qv.data(), kv.data(), ti, tj);
  PairReadout r;
  r.masked = p.sw.causal && j > i;
  r.lag = t.lag;
  r.dt = t.dt;
  r.decay = t.E;
  if (r.masked) return r;
  r.vcov = t.vcov;
  r.bias = t.B;
  r.precision = t.P;
  r.q_norm2 = t.q_norm2;
  r.k_norm2 = t.k_norm2;
  r.cross = t.cross;
  r.residual2 = t.R2;
  r.L = t.L;
  r.logit = t.logit;
  r.ahat = l > 0 ? std::exp(t.logit - (double)m) / (double)l : 0.0;
  r.a = r.ahat * t.E;
  return r;
}

Result<KernelCurves> Session::curves(int layer, int head, const std::vector<double>& lags) {
  Impl& I = *impl_;
  if (layer < 0 || layer >= (int)I.layers.size() || head < 0 || head >= I.model->n_heads)
    return Status(Code::invalid_argument, "curves: layer/head out of range");
  if (lags.empty()) return Status(Code::invalid_argument, "curves: no lags");
  const int H = I.model->n_heads, n = (int)lags.size();
  std::vector<float> lf(lags.begin(), lags.end());
  auto lb = I.g->upload_new(lf, "curve lags");
  if (!lb) return lb.status();
  auto ob = I.g->allocator().allocate((uint64_t)H * 4 * n * 4, gpu::MemoryKind::device, "curves");
  if (!ob) return ob.status();
  LayerGpu& L = I.layers[(size_t)layer];
  gpu::Recorder rec(*I.g);
  RFA_TRY(rec.begin());
  Status s = ops::record_rfa_curves(*I.g, rec, *L.attn, *lb, (uint32_t)n, *ob);
  Status s2 = rec.submit_and_wait();
  RFA_TRY(s);
  RFA_TRY(s2);
  std::vector<float> raw((size_t)H * 4 * n);
  RFA_TRY(I.g->download(*ob, raw.data(), raw.size() * 4));
  KernelCurves c;
  c.lags = lags;
  auto col = [&](int which) {
    const float* p = &raw[((size_t)head * 4 + which) * n];
    return std::vector<double>(p, p + n);
  };
  c.decay = col(0);
  c.vcov = col(1);
  c.precision = col(2);
  c.bias = col(3);
  return c;
}

Status Session::render_attention(Heatmap& map, const HeatmapRequest& req) {
  Impl& I = *impl_;
  if (req.layer < 0 || req.layer >= (int)I.layers.size() || req.head < 0 || req.head >= I.model->n_heads ||
      req.b < 0 || req.b >= I.batch)
    return Status(Code::invalid_argument, "render_attention: layer " + std::to_string(req.layer) + ", head " +
                                              std::to_string(req.head) + ", batch row " + std::to_string(req.b) +
                                              " out of range");
  // The probed rectangle: the view clipped to the computed positions.
  const int pr0 = std::min(req.r0, I.filled), pr1 = std::min(req.r1, I.filled);
  const int pc0 = std::min(req.c0, I.filled), pc1 = std::min(req.c1, I.filled);
  LayerGpu& L = I.layers[(size_t)req.layer];
  const bool causal = L.attn->params().sw.causal;
  return probe::render_heatmap(*I.g, map, req, causal, pr0, pr1, pc0, pc1,
                               [&](gpu::Recorder& rec, gpu::Buffer& ahat, gpu::Buffer& a) {
                                 return ops::record_rfa_probe(*I.g, rec, *L.attn, L.cache, I.timestamps,
                                                              (uint32_t)req.b, (uint32_t)req.head, (uint32_t)pr0,
                                                              (uint32_t)pr1, (uint32_t)pc0, (uint32_t)pc1, ahat, a);
                               });
}

}  // namespace rfa
