// Session::head_diagnostics: the attention tomography of one head over a window (docs/DIAGNOSTICS.md §3).
// One submission records, per temperature, the row statistics and the window of P on the GPU
// (ops/rfa_tomography); the host then reads them back with the window's cached Q~ and K~ and does
// the dense part in double: tilts and their moments, the eigenvalues of the tilt covariance and of
// the normals' Gram form, and the singular values of each P.
#include <chrono>
#include <cmath>
#include <cstring>
#include <complex>
#include <string>

#include "mechanisms/mechanism.hpp"
#include "ops/rfa_tomography.hpp"
#include "probe/linalg.hpp"
#include "rfa/inspect.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::LayerGpu;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Largest side of a window whose singular values are taken: 1024^3 flops-ish per P on the host
// (~0.5-1 s), beyond which a frame-rate caller should narrow the window or drop the spectrum.
constexpr int kMaxSpectrumSide = 1024;
constexpr size_t kMaxSweep = 64;
// Numerical rank tolerance of an fp32 matrix (docs/DIAGNOSTICS.md §3): max(m, n) sigma_1 2^-23.
constexpr double kRankTolerance = 1.0 / 8388608.0;

// [x0, x1) with the request's conventions (x1 < 0: through `filled`; x0 < 0: the last -x0).
Status resolve(const char* what, int& x0, int& x1, int filled) {
  const int a = x0, b = x1;
  if (x1 < 0) x1 = filled;
  if (x0 < 0) x0 = std::max(0, x1 + x0);
  if (x0 >= x1 || x1 > filled)
    return Status(Code::invalid_argument, std::string("head_diagnostics: ") + what + " [" + std::to_string(a) + ", " +
                                              std::to_string(b) + ") resolve to [" + std::to_string(x0) + ", " +
                                              std::to_string(x1) + "), empty or beyond the " + std::to_string(filled) +
                                              " filled positions");
  return Status::Ok();
}

// Cached complex vectors (re, im per dim) of positions [p0, p1) of (b, head) from a ring of
// `capacity` slots: out [p1 - p0][2D] floats, in position order.
Status download_ring(gpu::Context& g, const gpu::Buffer& buf, const ops::AttentionCache& c, int b, int head, int p0,
                     int p1, std::vector<float>& out, bool is_kv = false) {
  const size_t D = c.dim, base = ((size_t)b * c.heads + head) * c.capacity;
  const size_t bpc = is_kv ? c.kv_bytes_per_component() : 8;  // bytes per complex component
  std::vector<uint8_t> raw((size_t)(p1 - p0) * D * bpc);
  for (int p = p0; p < p1;) {
    const size_t slot = (size_t)p % c.capacity;
    const int run = (int)std::min<size_t>((size_t)(p1 - p), c.capacity - slot);  // up to the ring's end
    RFA_TRY(g.download(buf, raw.data() + (size_t)(p - p0) * D * bpc, (size_t)run * D * bpc, (base + slot) * D * bpc));
    p += run;
  }
  out.resize((size_t)(p1 - p0) * 2 * D);
  if (is_kv) ops::kv_to_floats(c, raw.data(), (size_t)(p1 - p0) * D, out.data());
  else std::memcpy(out.data(), raw.data(), raw.size());
  return Status::Ok();
}

// G = W W^T of the head's key map in the tilts' layout (index 2d: Re of complex dim d, 2d+1: Im):
// rows h*D + d and H*D + h*D + d of W_k (the half-split projection), times the complex input
// norm's gain when that norm is on. The norm's per-token 1/rms rescales a key, not the direction
// of the normal, so it is left out (docs/DIAGNOSTICS.md).
std::vector<double> key_gram(const AttentionLayer& L, int head) {
  const AttentionParams& p = L.params;
  const int H = p.heads, D = p.dim, in = L.wk.in, d = 2 * D;
  std::vector<const float*> row((size_t)d);
  std::vector<double> gain((size_t)d, 1.0);
  for (int k = 0; k < D; ++k) {
    row[(size_t)(2 * k)] = L.wk.weight.data.data() + (size_t)(head * D + k) * in;
    row[(size_t)(2 * k + 1)] = L.wk.weight.data.data() + (size_t)(H * D + head * D + k) * in;
    if (p.sw.complex_input_norm && !p.norm_k.empty())
      gain[(size_t)(2 * k)] = gain[(size_t)(2 * k + 1)] = p.norm_k[(size_t)(head * D + k)];
  }
  std::vector<double> G((size_t)d * d);
  for (int a = 0; a < d; ++a)
    for (int c = a; c < d; ++c) {
      double s = 0;
      for (int x = 0; x < in; ++x) s += (double)row[(size_t)a][x] * (double)row[(size_t)c][x];
      G[(size_t)a * d + c] = G[(size_t)c * d + a] = s * gain[(size_t)a] * gain[(size_t)c];
    }
  return G;
}

// The vectors a head scores with, from the cached ones (docs/DIAGNOSTICS.md §2): the caches hold
// them as they are for RFA (Q~, K~) and RT-RFA (the unit directions); the mechanism says what else
// (an AFA layer under the unitary switch projects each channel to unit modulus). v: [n][2D] floats.
void to_scored(const AttentionParams& p, std::vector<float>& v) { mech::mechanism_of(p).to_scored(p, v); }

struct Spectrum {
  std::vector<double> sv;
  double erank = 0;
  int rank = 0;
};

Result<Spectrum> spectrum_of(const std::vector<float>& P, int rows, int cols) {
  Spectrum s;
  auto sv = linalg::singular_values(std::vector<double>(P.begin(), P.end()), rows, cols);
  if (!sv) return sv.status();
  s.sv = sv.take();
  s.erank = linalg::effective_rank(s.sv);
  s.rank = linalg::numerical_rank(s.sv, rows, cols, kRankTolerance);
  return s;
}

}  // namespace

Result<HeadDiagnostics> Inspector::head_diagnostics(const DiagnosticsRequest& req) {
  const auto held = session_->impl_->lock();
  const auto t_call = Clock::now();
  Session::Impl& I = *session_->impl_;
  if (req.layer < 0 || req.layer >= (int)I.layers.size())
    return Status(Code::invalid_argument, "head_diagnostics: layer " + std::to_string(req.layer) + " out of range [0, " +
                                              std::to_string(I.layers.size()) + ")");
  if (req.head < 0 || req.head >= I.model->n_heads)
    return Status(Code::invalid_argument, "head_diagnostics: head " + std::to_string(req.head) + " out of range [0, " +
                                              std::to_string(I.model->n_heads) + ")");
  if (req.b < 0 || req.b >= I.batch)
    return Status(Code::invalid_argument, "head_diagnostics: batch row " + std::to_string(req.b) + " out of range [0, " +
                                              std::to_string(I.batch) + ")");
  if (I.filled == 0) return Status(Code::invalid_argument, "head_diagnostics: no positions computed yet");
  HeadDiagnostics out;
  out.layer = req.layer;
  out.head = req.head;
  out.b = req.b;
  out.r0 = req.r0, out.r1 = req.r1, out.c0 = req.c0, out.c1 = req.c1;
  RFA_TRY(resolve("rows", out.r0, out.r1, I.filled));
  RFA_TRY(resolve("columns", out.c0, out.c1, I.filled));
  if (I.in_frame) return Status(Code::invalid_argument, "head_diagnostics inside an open frame; call it after end_frame()");
  if (out.r0 < I.oldest() || out.c0 < I.oldest())
    return Status(Code::invalid_argument, "head_diagnostics: rows/columns reach before position " +
                                              std::to_string(I.oldest()) + ", the oldest still in the cache");
  const int rows = out.r1 - out.r0, cols = out.c1 - out.c0;
  if (req.sweep.size() > kMaxSweep)
    return Status(Code::invalid_argument, "head_diagnostics: sweep of " + std::to_string(req.sweep.size()) +
                                              " temperatures exceeds " + std::to_string(kMaxSweep));
  std::vector<double> alphas = {req.alpha};
  alphas.insert(alphas.end(), req.sweep.begin(), req.sweep.end());
  for (double a : alphas)
    if (!(a > 0) || !std::isfinite(a) || !std::isfinite((float)a))
      return Status(Code::invalid_argument, "head_diagnostics: alpha " + std::to_string(a) + " must be finite and > 0");
  if (req.spectrum && (rows > kMaxSpectrumSide || cols > kMaxSpectrumSide))
    return Status(Code::invalid_argument, "head_diagnostics: window " + std::to_string(rows) + " x " + std::to_string(cols) +
                                              " exceeds the spectrum's " + std::to_string(kMaxSpectrumSide) +
                                              " per side (narrow it, or set spectrum = false)");
  out.alpha = req.alpha;
  out.decayed = req.decayed;
  const AttentionLayer& layer = I.model->layer(req.layer);
  const AttentionParams& p = layer.params;
  const int D = p.dim, d = 2 * D;
  out.d = d;
  LayerGpu& L = I.layers[(size_t)req.layer];

  // ---- GPU: row statistics and P, per temperature, one submission ----
  const size_t A = alphas.size();
  std::vector<gpu::Buffer> row_bufs(A), p_bufs(req.spectrum ? A : 0);
  for (size_t k = 0; k < A; ++k) {
    auto rb = I.g->allocator().allocate((uint64_t)rows * ops::kTomographyRowStride * 4, gpu::MemoryKind::device,
                                        "tomography rows");
    if (!rb) return rb.status();
    row_bufs[k] = rb.take();
    if (!req.spectrum) continue;
    auto pb = I.g->allocator().allocate((uint64_t)rows * cols * 4, gpu::MemoryKind::device, "tomography P");
    if (!pb) return pb.status();
    p_bufs[k] = pb.take();
  }
  {
    gpu::Recorder rec(*I.g);
    RFA_TRY(rec.begin());
    Status s;
    for (size_t k = 0; k < A && s.ok(); ++k) {
      s = ops::record_rfa_tomography_rows(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)req.b, (uint32_t)req.head,
                                          (uint32_t)out.r0, (uint32_t)out.r1, (float)alphas[k], row_bufs[k], req.channel);
      if (s.ok() && req.spectrum)
        s = ops::record_rfa_tomography_matrix(*I.g, rec, *L.attn, L.cache, I.timestamps, (uint32_t)req.b,
                                              (uint32_t)req.head, (uint32_t)out.r0, (uint32_t)out.r1, (uint32_t)out.c0,
                                              (uint32_t)out.c1, (float)alphas[k], req.decayed, row_bufs[k], p_bufs[k],
                                              req.channel);
    }
    Status s2 = rec.submit_and_wait();
    RFA_TRY(s);
    RFA_TRY(s2);
    out.timings.gpu_ms = rec.gpu_ms_total();
  }
  std::vector<std::vector<float>> stats(A), mats(req.spectrum ? A : 0);
  for (size_t k = 0; k < A; ++k) {
    stats[k].resize((size_t)rows * ops::kTomographyRowStride);
    RFA_TRY(I.g->download(row_bufs[k], stats[k].data(), stats[k].size() * 4));
    if (!req.spectrum) continue;
    mats[k].resize((size_t)rows * cols);
    RFA_TRY(I.g->download(p_bufs[k], mats[k].data(), mats[k].size() * 4));
  }
  std::vector<float> q, kk;
  RFA_TRY(download_ring(*I.g, L.cache.q, L.cache, req.b, req.head, out.r0, out.r1, q));
  RFA_TRY(download_ring(*I.g, L.cache.k, L.cache, req.b, req.head, out.c0, out.c1, kk, true));
  to_scored(p, q);
  to_scored(p, kk);

  // ---- host ----
  const auto t_host = Clock::now();
  auto row_means = [&](const std::vector<float>& st, double* entropy, double* max_weight) {
    double e = 0, m = 0;
    for (int r = 0; r < rows; ++r) {
      e += st[(size_t)r * ops::kTomographyRowStride + ops::kTomoEntropy];
      m += st[(size_t)r * ops::kTomographyRowStride + ops::kTomoMaxWeight];
    }
    *entropy = e / rows;
    *max_weight = m / rows;
  };
  out.rows.resize((size_t)rows);
  HeadMoments& mo = out.moments;
  mo.d = d;
  mo.d_token = layer.wk.in;
  mo.queries = rows;
  mo.keys = cols;
  mo.uu.assign((size_t)d * d, 0.0);
  mo.uu0.assign((size_t)d * d, 0.0);
  mo.q_sum.assign((size_t)d, 0.0);
  mo.q_sq.assign((size_t)d, 0.0);
  mo.k_sum.assign((size_t)d, 0.0);
  mo.k_sq.assign((size_t)d, 0.0);
  if (req.keep_tilts) out.tilts.assign((size_t)rows * d, 0.0);
  const double* omega = p.omega.data() + (size_t)req.head * D;
  std::vector<double> u((size_t)d), u0((size_t)d);
  for (int r = 0; r < rows; ++r) {
    const float* st = &stats[0][(size_t)r * ops::kTomographyRowStride];
    QueryDiagnostics& qd = out.rows[(size_t)r];
    qd.position = out.r0 + r;
    qd.keys = (int)st[ops::kTomoKeys];
    qd.q_norm = st[ops::kTomoQNorm];
    qd.tau = st[ops::kTomoTau];
    qd.entropy = st[ops::kTomoEntropy];
    qd.log_partition = st[ops::kTomoLogZ];
    qd.max_weight = st[ops::kTomoMaxWeight];
    qd.mean_s = st[ops::kTomoMeanS];
    qd.var_s = st[ops::kTomoVarS];
    qd.mean_logit = st[ops::kTomoMeanLogit];
    qd.var_logit = st[ops::kTomoVarLogit];
    qd.expected_lag = st[ops::kTomoExpectedLag];
    mo.tau_sum += qd.tau;
    mo.tau_sq += qd.tau * qd.tau;
    const double n = qd.keys, mean = st[ops::kTomoUniformMean], var = st[ops::kTomoUniformVar];
    mo.logits += qd.keys;
    mo.logit_sum += n * mean;
    mo.logit_sq += n * (var + mean * mean);
    // The tilt in the stationary frame, and u0 = e^{+i omega t_i} u in the query's own frame.
    const float* qi = &q[(size_t)r * d];
    double norm = 0;
    for (int k = 0; k < d; ++k) {
      norm += (double)qi[k] * qi[k];
      mo.q_sum[(size_t)k] += qi[k];
      mo.q_sq[(size_t)k] += (double)qi[k] * qi[k];
    }
    norm = std::sqrt(norm);
    const double ti = I.host_t[(size_t)req.b].at(qd.position);
    for (int k = 0; k < D; ++k) {
      const std::complex<double> z = norm > 0 ? std::complex<double>(qi[2 * k], qi[2 * k + 1]) / norm : 0.0;
      const std::complex<double> z0 = z * std::polar(1.0, omega[k] * ti);
      u[(size_t)(2 * k)] = z.real(), u[(size_t)(2 * k + 1)] = z.imag();
      u0[(size_t)(2 * k)] = z0.real(), u0[(size_t)(2 * k + 1)] = z0.imag();
    }
    for (int a = 0; a < d; ++a)
      for (int c = 0; c < d; ++c) {
        mo.uu[(size_t)a * d + c] += u[(size_t)a] * u[(size_t)c];
        mo.uu0[(size_t)a * d + c] += u0[(size_t)a] * u0[(size_t)c];
      }
    if (req.keep_tilts) std::copy(u.begin(), u.end(), out.tilts.begin() + (size_t)r * d);
  }
  for (int c = 0; c < cols; ++c)
    for (int k = 0; k < d; ++k) {
      const double x = kk[(size_t)c * d + k];
      mo.k_sum[(size_t)k] += x;
      mo.k_sq[(size_t)k] += x * x;
    }
  mo.key_gram = key_gram(layer, req.head);
  row_means(stats[0], &out.entropy_mean, &out.max_weight_mean);

  const auto t_eig = Clock::now();
  auto sm = summarize(mo);
  if (!sm) return sm.status();
  out.summary = sm.take();
  out.timings.eigen_ms = ms_since(t_eig);

  const auto t_svd = Clock::now();
  out.sweep.resize(A - 1);
  for (size_t k = 0; k < A; ++k) {
    Spectrum sp;
    if (req.spectrum) {
      auto s = spectrum_of(mats[k], rows, cols);
      if (!s) return s.status();
      sp = s.take();
    }
    if (k == 0) {
      out.singular_values = std::move(sp.sv);
      out.erank = sp.erank;
      out.rank = sp.rank;
      out.nullity = req.spectrum ? cols - sp.rank : 0;
    } else {
      SweepPoint& pt = out.sweep[k - 1];
      pt.alpha = alphas[k];
      row_means(stats[k], &pt.entropy, &pt.max_weight);
      pt.singular_values = std::move(sp.sv);
      pt.erank = sp.erank;
      pt.rank = sp.rank;
    }
  }
  out.timings.svd_ms = ms_since(t_svd);
  out.timings.host_ms = ms_since(t_host);
  out.timings.wall_ms = ms_since(t_call);
  return out;
}

Result<std::vector<float>> Inspector::iterates(int layer, int head, int b, int r0, int r1) {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  RFA_TRY(I.check_probe(layer, head, b, r0, r1, I.oldest(), std::max(I.oldest() + 1, I.filled)));
  LayerGpu& L = I.layers[(size_t)layer];
  const AttentionParams& p = L.attn->params();
  const std::vector<mech::Mechanism::Iterate> its = mech::mechanism_of(p).iterates(p, L.cache);
  if (its.empty())
    return Status(Code::unsupported, "iterates: layer " + std::to_string(layer) + " has no tied iterations (" +
                                         attention_variant_name(p.variant) + ", afa_irls_iterations = 1 or not AFA)");
  const int D = p.dim, rows = r1 - r0;
  std::vector<float> out;
  out.reserve(its.size() * (size_t)rows * 2 * D);
  std::vector<float> z;
  for (const mech::Mechanism::Iterate& it : its) {
    RFA_TRY(download_ring(*I.g, *it.buffer, L.cache, b, head, r0, r1, z, it.kv_f16 || it.buffer == &L.cache.v));
    // Back from the caches' frame: z = e^{i omega_k t_i} z~, the angle in double (as the kernels'
    // counter-rotation).
    for (int r = 0; r < rows; ++r) {
      const double t = I.host_t[(size_t)b].at(r0 + r);
      for (int k = 0; k < D; ++k) {
        const std::complex<double> zt(z[((size_t)r * D + k) * 2], z[((size_t)r * D + k) * 2 + 1]);
        const std::complex<double> zo = zt * std::polar(1.0, p.omega[(size_t)head * D + k] * t);
        out.push_back((float)zo.real());
        out.push_back((float)zo.imag());
      }
    }
  }
  return out;
}

}  // namespace rfa
