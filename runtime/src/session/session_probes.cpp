// Session probes: what the viewer and tools read of a running session. All of them recompute from
// the per-layer caches (rotated Q/K, norms, row statistics); nothing is kept per pair.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>

#include "mechanisms/mechanism.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "probe/heatmap_render.hpp"
#include "rfa/inspect.hpp"
#include "model/physics.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::LayerGpu;

Result<std::vector<float>> Session::Impl::run_probe(uint64_t floats, const ProbeRecord& record) {
  Impl& I = *this;
  auto dev = I.g->allocator().allocate(std::max<uint64_t>(floats, 1) * 4, gpu::MemoryKind::device, "probe result");
  if (!dev) return dev.status();
  if (!I.probe_out.valid() || I.probe_out.size < floats * 4) {
    I.probe_out.release();
    auto rb = I.g->allocator().allocate(std::max<uint64_t>(floats, 1) * 4, gpu::MemoryKind::readback, "probe readback");
    if (!rb) return rb.status();
    I.probe_out = rb.take();
  }
  gpu::Recorder& rec = *I.probe_rec;
  RFA_TRY(rec.begin());
  Status s = record(rec, *dev);
  rec.copy(*dev, I.probe_out, floats * 4);
  Status e = rec.end();
  RFA_TRY(s);  // a recording that failed is never submitted
  RFA_TRY(e);
  RFA_TRY(rec.submit());
  RFA_TRY(rec.wait());
  ++I.submits;
  I.bytes_down += floats * 4;
  std::vector<float> out(floats);
  std::memcpy(out.data(), I.probe_out.mapped, floats * 4);
  return out;
}

int Inspector::first_full_row() const {
  const auto held = session_->impl_->lock();
  const Session::Impl& I = *session_->impl_;
  const int lo = I.oldest();
  return I.window > 0 && lo > 0 ? lo + I.window - 1 : lo;
}

std::vector<double> Inspector::timestamps(int b) const {
  const auto held = session_->impl_->lock();
  const Session::Impl& I = *session_->impl_;
  std::vector<double> out;
  if (b < 0 || b >= I.batch) return out;
  for (int p = I.oldest(); p < I.filled; ++p) out.push_back(I.host_t[(size_t)b].at(p));
  return out;
}

Result<std::vector<float>> Inspector::attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed) {
  return attention(layer, head, b, r0, r1, c0, c1, decayed, kAllChannels);
}

Result<std::vector<float>> Inspector::attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed,
                                                int channel) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (r0 == kCached) r0 = I.oldest();
  if (c0 == kCached) c0 = I.oldest();
  if (r1 == kCached) r1 = I.filled;
  if (c1 == kCached) c1 = I.filled;
  RFA_TRY(I.check_probe(layer, head, b, r0, r1, c0, c1));
  const uint64_t cells = (uint64_t)(r1 - r0) * (uint64_t)(c1 - c0);
  auto other = I.g->allocator().allocate(cells * 4, gpu::MemoryKind::device, "probe (unused map)");
  if (!other) return other.status();
  LayerGpu& L = I.layers[(size_t)layer];
  return I.run_probe(cells, [&](gpu::Recorder& rec, gpu::Buffer& result) {
    gpu::Buffer& ahat = decayed ? *other : result;
    gpu::Buffer& a = decayed ? result : *other;
    return ops::record_rfa_probe(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head, (uint32_t)r0,
                                 (uint32_t)r1, (uint32_t)c0, (uint32_t)c1, ahat, a, channel);
  });
}

Result<std::vector<RowDiagnostics>> Inspector::row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                             const double thresholds[4]) {
  return row_diagnostics(layer, head, b, r0, r1, thresholds, kAllChannels);
}

Result<std::vector<RowDiagnostics>> Inspector::row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                             const double thresholds[4], int channel) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (r0 == kCached) r0 = first_full_row();
  if (r1 == kCached) r1 = I.filled;
  RFA_TRY(I.check_probe(layer, head, b, r0, r1, I.oldest(), std::max(I.oldest() + 1, I.filled)));
  const uint32_t rows = (uint32_t)(r1 - r0);
  float th[4];
  for (int i = 0; i < 4; ++i) th[i] = (float)thresholds[i];
  LayerGpu& L = I.layers[(size_t)layer];
  auto got = I.run_probe((uint64_t)rows * 8, [&](gpu::Recorder& rec, gpu::Buffer& result) {
    return ops::record_rfa_row_diagnostics(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head,
                                           (uint32_t)r0, (uint32_t)r1, th, result, channel);
  });
  if (!got) return got.status();
  const std::vector<float>& raw = *got;
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

Result<PairReadout> Inspector::pair(int layer, int head, int b, int i, int j) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  RFA_TRY(I.check_probe(layer, head, b, i, i + 1, j, j + 1));
  const AttentionParams& p = I.model->layer(layer).params;
  const mech::Mechanism& mechanism = mech::mechanism_of(p);
  if (!mechanism.has_pair_readout()) return mechanism.unsupported("pair readout");
  const LayerGpu& L = I.layers[(size_t)layer];
  const size_t D = (size_t)p.dim, row = ((size_t)b * p.heads + head) * (size_t)I.capacity;
  const size_t si = (size_t)i % (size_t)I.capacity, sj = (size_t)j % (size_t)I.capacity;  // ring slots
  // The few bytes of the pair, gathered by copies into one readback in one submission.
  auto got = I.run_probe(4 * D + 2, [&](gpu::Recorder& rec, gpu::Buffer& result) {
    rec.copy(L.cache.q, result, D * 8, (row + si) * D * 8, 0);
    const uint64_t kb = L.cache.kv_bytes_per_component();  // 8, or 4 for packed fp16 keys
    rec.copy(L.cache.k, result, D * kb, (row + sj) * D * kb, D * 8);
    rec.copy(L.cache.row_max, result, 4, (row + si) * 4, 4 * D * 4);
    rec.copy(L.cache.row_sum, result, 4, (row + si) * 4, (4 * D + 1) * 4);
    return Status::Ok();
  });
  if (!got) return got.status();
  const std::vector<float> q(got->begin(), got->begin() + 2 * D);
  std::vector<float> k(2 * D);
  ops::kv_to_floats(L.cache, got->data() + 2 * D, D, k.data());
  const float m = (*got)[4 * D], l = (*got)[4 * D + 1];
  const double ti = I.host_t[(size_t)b].at(i), tj = I.host_t[(size_t)b].at(j);
  // The caches hold Q~ = Q e^{-i omega t} after the input norm: the kernel's own operands.
  std::vector<std::complex<double>> qv(D), kv(D);
  for (size_t d = 0; d < D; ++d) {
    qv[d] = {q[2 * d], q[2 * d + 1]};
    kv[d] = {k[2 * d], k[2 * d + 1]};
  }
  const physics::PairTerms t = physics::pair_terms(p, head, qv, kv, ti, tj);
  PairReadout r;
  r.masked = p.sw.causal && (j > i || (I.window > 0 && i - j >= I.window));
  r.lag = t.lag;
  r.dt = t.k.dt;
  r.decay = t.k.E;
  if (r.masked) return r;
  r.vcov = t.k.vcov;
  r.bias = t.k.B;
  r.precision = t.k.P;
  r.q_norm2 = t.q_norm2;
  r.k_norm2 = t.k_norm2;
  r.cross = t.cross;
  r.residual2 = t.R2;
  r.L = t.L;
  r.logit = t.logit;
  r.ahat = l > 0 ? std::exp(t.logit - (double)m) / (double)l : 0.0;
  r.a = r.ahat * t.k.E;
  return r;
}

Result<KernelCurves> Inspector::curves(int layer, int head, const std::vector<double>& lags) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (layer < 0 || layer >= (int)I.layers.size() || head < 0 || head >= I.model->n_heads)
    return Status(Code::invalid_argument, "curves: layer/head out of range");
  if (lags.empty()) return Status(Code::invalid_argument, "curves: no lags");
  if (I.in_frame) return Status(Code::invalid_argument, "curves inside an open frame; call it after end_frame()");
  const int H = I.model->n_heads, n = (int)lags.size();
  std::vector<float> lf(lags.begin(), lags.end());
  auto lb = I.g->upload_new(lf, "curve lags");
  if (!lb) return lb.status();
  LayerGpu& L = I.layers[(size_t)layer];
  auto got = I.run_probe((uint64_t)H * 4 * n, [&](gpu::Recorder& rec, gpu::Buffer& result) {
    return ops::record_rfa_curves(*I.g, rec, *L.attn, *lb, (uint32_t)n, result);
  });
  if (!got) return got.status();
  const std::vector<float>& raw = *got;
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

Status Inspector::render_attention(Heatmap& map, const HeatmapRequest& req) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (req.layer < 0 || req.layer >= (int)I.layers.size() || req.head < 0 || req.head >= I.model->n_heads ||
      req.b < 0 || req.b >= I.batch)
    return Status(Code::invalid_argument, "render_attention: layer " + std::to_string(req.layer) + ", head " +
                                              std::to_string(req.head) + ", batch row " + std::to_string(req.b) +
                                              " out of range");
  // The probed rectangle: the view clipped to the positions still in the cache.
  const int lo = I.oldest();
  const int pr0 = std::clamp(req.r0, lo, I.filled), pr1 = std::clamp(req.r1, lo, I.filled);
  const int pc0 = std::clamp(req.c0, lo, I.filled), pc1 = std::clamp(req.c1, lo, I.filled);
  LayerGpu& L = I.layers[(size_t)req.layer];
  const bool causal = L.attn->params().sw.causal;
  auto rec = probe::record_heatmap(*I.g, map, req, causal, pr0, pr1, pc0, pc1,
                                   [&](gpu::Recorder& rec, gpu::Buffer& ahat, gpu::Buffer& a) {
                                     return ops::record_rfa_probe(*I.g, rec, *L.attn, L.cache, I.timestamps,
                                                                  (uint32_t)req.b, (uint32_t)req.head, (uint32_t)pr0,
                                                                  (uint32_t)pr1, (uint32_t)pc0, (uint32_t)pc1, ahat, a,
                                                                  req.channel);
                                   });
  if (!rec) return rec.status();
  if (I.in_frame) {
    I.frame_recs.push_back(*rec);  // with the frame's step, in one submission
    return Status::Ok();
  }
  ++I.submits;
  RFA_TRY((*rec)->submit());
  return (*rec)->wait();
}

}  // namespace rfa

namespace rfa {

Status Inspector::watch_row(int layer, int head, int b, int row, bool decayed, const double thresholds[4]) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (!I.in_frame) return Status(Code::invalid_argument, "watch_row belongs in a frame (between begin_frame and end_frame)");
  if (layer < 0 || layer >= (int)I.layers.size() || head < 0 || head >= I.model->n_heads || b < 0 || b >= I.batch)
    return Status(Code::invalid_argument, "watch_row: layer, head or batch row out of range");
  LayerGpu& L = I.layers[(size_t)layer];
  const bool causal = L.attn->params().sw.causal;
  const int first = causal ? std::max(I.oldest(), I.window > 0 ? row - I.window + 1 : 0) : I.oldest();
  const int last = causal ? row + 1 : I.filled;
  if (row < I.oldest() || row >= I.filled)
    return Status(Code::invalid_argument, "watch_row: row " + std::to_string(row) + " outside positions [" +
                                              std::to_string(I.oldest()) + ", " + std::to_string(I.filled) + ")");
  const uint64_t cols = (uint64_t)(last - first);
  auto grow = [&](gpu::Buffer& buf, uint64_t bytes, gpu::MemoryKind kind, const char* what) -> Status {
    if (buf.valid() && buf.size >= bytes) return Status::Ok();
    buf.release();
    auto r = I.g->allocator().allocate(bytes, kind, what);
    if (!r) return r.status();
    buf = r.take();
    return Status::Ok();
  };
  // (begin_frame() waited for the previous frame: the watch buffers are free.)
  RFA_TRY(grow(I.watch_ahat, cols * 4, gpu::MemoryKind::device, "watched row Ahat"));
  RFA_TRY(grow(I.watch_a, cols * 4, gpu::MemoryKind::device, "watched row A"));
  RFA_TRY(grow(I.watch_diag, 8 * 4, gpu::MemoryKind::device, "watched row diagnostics"));
  RFA_TRY(grow(I.watch_out, (cols + 8) * 4, gpu::MemoryKind::readback, "watched row readback"));
  if (!I.watch_rec) I.watch_rec = std::make_unique<gpu::Recorder>(*I.g, gpu::GpuTiming::none);
  float th[4];
  for (int k = 0; k < 4; ++k) th[k] = (float)thresholds[k];
  gpu::Recorder& R = *I.watch_rec;
  RFA_TRY(R.begin());
  Status s = ops::record_rfa_probe(*I.g, R, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head, (uint32_t)row,
                                   (uint32_t)row + 1, (uint32_t)first, (uint32_t)last, I.watch_ahat, I.watch_a);
  if (s.ok())
    s = ops::record_rfa_row_diagnostics(*I.g, R, *L.attn, L.cache, I.timestamps, (uint32_t)b, (uint32_t)head,
                                        (uint32_t)row, (uint32_t)row + 1, th, I.watch_diag);
  R.copy(decayed ? I.watch_a : I.watch_ahat, I.watch_out, cols * 4);
  R.copy(I.watch_diag, I.watch_out, 8 * 4, 0, cols * 4);
  Status e = R.end();
  RFA_TRY(s);
  RFA_TRY(e);
  I.frame_recs.push_back(&R);
  I.watch_pending = WatchedRow{};
  I.watch_pending.layer = layer;
  I.watch_pending.head = head;
  I.watch_pending.b = b;
  I.watch_pending.row = row;
  I.watch_pending.first_key = first;
  I.watch_pending.decayed = decayed;
  I.watch_queued = true;
  return Status::Ok();
}

const WatchedRow& Inspector::watched_row() const { return session_->impl_->watched; }

Result<std::vector<WindowTruncation>> Inspector::window_report(int b, bool measure) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (I.window == 0) return Status(Code::invalid_argument, "window_report: this session has no window");
  if (b < 0 || b >= I.batch) return Status(Code::invalid_argument, "window_report: batch row " + std::to_string(b) + " out of range");
  if (I.filled == 0) return Status(Code::invalid_argument, "window_report: no position yet");
  const int i = I.filled - 1, W = I.window;
  const auto& T = I.host_t[(size_t)b];
  const bool evicted = i - W >= 0;
  const double edge = evicted ? T.at(i) - T.at(i - W) : 0.0;
  // The oldest eighth of the window: keys j <= k8 = i - W + W/8. The diagnostics count lags above
  // a threshold, so it sits halfway between the lags of keys k8 and k8 + 1 (keys with equal
  // timestamps cannot be told apart by lag: they count together).
  const int k8 = i - W + std::max(1, W / 8);
  const double thr = k8 >= 0 ? 0.5 * ((T.at(i) - T.at(k8)) + (T.at(i) - T.at(std::min(k8 + 1, i)))) : INFINITY;
  std::vector<WindowTruncation> out;
  for (int l = 0; l < (int)I.layers.size(); ++l) {
    const AttentionParams& p = I.model->layer(l).params;
    for (int h = 0; h < p.heads; ++h) {
      WindowTruncation w;
      w.layer = l;
      w.head = h;
      w.edge_lag = edge;
      // The decay that scales the head's A and its precision, at lag 0 and at the edge: RFA's E and
      // P; AFA's channel-mean decay and 1 / (nu v^C); RT-RFA's precision between unit magnitudes,
      // and no decay (its A is Ahat: an evicted key could have kept its whole weight).
      const mech::Mechanism& mechanism = mech::mechanism_of(p);
      const KernelCurves cv = mechanism.curves(p, h, {0.0, edge});
      const double e_edge = mechanism.decays_weights() ? cv.decay[1] : 1.0;
      const double p0 = cv.precision[0], p_edge = cv.precision[1];
      w.decay_bound = evicted ? e_edge : 0.0;
      w.precision_ratio = evicted && p0 > 0 ? p_edge / p0 : 0.0;
      if (measure && std::isfinite(thr)) {
        const double thresholds[4] = {thr, thr, thr, thr};
        auto d = row_diagnostics(l, h, b, i, i + 1, thresholds);
        if (!d) return d.status();
        w.edge_mass = (*d)[0].mass_beyond[0];
      }
      out.push_back(w);
    }
  }
  return out;
}

}  // namespace rfa
