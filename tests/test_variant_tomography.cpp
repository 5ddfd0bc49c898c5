// The attention tomography of AFA and RT-RFA heads through Session::head_diagnostics
// (docs/DIAGNOSTICS.md §2: q and k are the vectors each mechanism scores with), against the
// readout twin (reference/readout_ref.hpp) and double-precision linear algebra: every row column,
// the singular values of P and of its decayed form, the tilts' spectrum and effective dimension
// (from the twin's tilts of the scored queries: AFA's unit-modulus channels under the unitary
// switch, RT-RFA's unit directions), the normals n = W^T u0 formed explicitly in token space, the
// per-dim variances of the scored q and k, and the sweep; in a sliding window, the window report
// (bounds and edge mass of the head's own A) and the tomography of the ring's last rows. The row
// columns on every switch and shape: tests/test_variant_readouts.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "diagnostics_support.hpp"
#include "model_factory.hpp"
#include "probe/linalg.hpp"
#include "reference/ops_ref.hpp"
#include "reference/readout_ref.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/inspect.hpp"

using namespace rfa;
using namespace rfa::test;
using cd = std::complex<double>;

namespace {

using Expected = ExpectedDiagnostics;

// Everything from the definitions: the twin's rows at alpha, P over the window (times the decay of
// the head's A when `decayed`), the tilts u (stationary frame), u0 = u e^{+i omega t_i}, the normals
// W^T u0 in token space, the scored keys in the stationary frame.
Expected expected(const Model& m, const std::vector<float>& xf, int N, const std::vector<double>& t, int h, int r0,
                  int r1, int c0, int c1, double alpha, bool decayed) {
  const AttentionLayer& L = m.single;
  const AttentionParams& p = L.params;
  const int H = p.heads, D = p.dim, d = 2 * D, de = L.wk.in;
  const std::vector<double> x(xf.begin(), xf.end());
  const auto Q = ref::split_complex(ref::linear(L.wq, x, N), N, H, D);
  const auto K = ref::split_complex(ref::linear(L.wk, x, N), N, H, D);
  const auto V = ref::split_complex(ref::linear(L.wv, x, N), N, H, D);
  const bool afa = p.variant == AttentionVariant::afa;
  auto row_of = [&](int i) {
    ref::ReadoutRow r;
    const Status s = afa ? ref::afa_readout_row(ref::afa_twin_params(p), 1, N, Q, K, t, 0, 0, h, i, &r)
                         : ref::rt_readout_row(ref::rt_twin_params(p), 1, N, Q, K, V, t, 0, 0, h, i, &r);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    return r;
  };
  const double thr[4] = {1, 2, 3, 4};
  const int rows = r1 - r0, cols = c1 - c0;
  Expected e;
  std::vector<double>& P = e.P;
  P.assign((size_t)rows * cols, 0.0);
  std::vector<double> cu((size_t)d * d, 0.0), cn((size_t)de * de, 0.0);
  std::vector<double> qs(d, 0.0), qq(d, 0.0), ks(d, 0.0), kq(d, 0.0);
  const double* omega = p.omega.data() + (size_t)h * D;
  for (int i = r0; i < r1; ++i) {
    const ref::ReadoutRow row = row_of(i);
    const ref::ReadoutStats st = ref::readout_stats(row, alpha, D, thr);
    e.entropy.push_back(st.entropy);
    e.log_z.push_back(st.log_partition);
    e.max_w.push_back(st.max_weight);
    e.mean_s.push_back(st.mean_s);
    e.var_s.push_back(st.var_s);
    e.tau.push_back(st.tau);
    e.lag.push_back(st.expected_lag);
    e.entropy_mean += st.entropy / rows;
    for (size_t k = 0; k < row.keys.size(); ++k)
      if (row.keys[k].j >= c0 && row.keys[k].j < c1)
        P[(size_t)(i - r0) * cols + (row.keys[k].j - c0)] = st.p[k] * (decayed ? row.keys[k].decay : 1.0);
    // Tilt, the scored query in the stationary frame (q = |q| u), and the normal in token space.
    const double ti = t[(size_t)i];
    std::vector<double> n((size_t)de, 0.0);
    for (int k = 0; k < D; ++k) {
      const cd u(row.u[(size_t)2 * k], row.u[(size_t)2 * k + 1]);
      const cd u0 = u * std::polar(1.0, omega[k] * ti);
      for (int c = 0; c < de; ++c)
        n[(size_t)c] += L.wk.weight.data[(size_t)(h * D + k) * de + c] * u0.real() +
                        L.wk.weight.data[(size_t)(H * D + h * D + k) * de + c] * u0.imag();
    }
    for (int a = 0; a < d; ++a) {
      const double qa = row.q_norm * row.u[(size_t)a];
      qs[(size_t)a] += qa;
      qq[(size_t)a] += qa * qa;
      for (int b = 0; b < d; ++b) cu[(size_t)a * d + b] += row.u[(size_t)a] * row.u[(size_t)b] / rows;
    }
    for (int a = 0; a < de; ++a)
      for (int b = 0; b < de; ++b) cn[(size_t)a * de + b] += n[(size_t)a] * n[(size_t)b] / rows;
  }
  // The scored keys in the stationary frame: AFA's per-channel unit modulus under the unitary switch,
  // RT's unit direction; each rotated by e^{-i omega t_j}.
  for (int j = c0; j < c1; ++j) {
    const cd* kr = K.data() + ((size_t)j * H + h) * D;
    double kn = 0;
    for (int k = 0; k < D; ++k) kn += std::norm(kr[k]);
    kn = std::sqrt(kn);
    for (int k = 0; k < D; ++k) {
      cd z = kr[k];
      if (afa && p.afa.unitary) z = std::abs(z) > 0 ? z / std::abs(z) : cd(0, 0);
      if (!afa) z /= std::max(kn, 1e-12);
      z *= std::polar(1.0, -omega[k] * t[(size_t)j]);
      ks[(size_t)2 * k] += z.real(), ks[(size_t)2 * k + 1] += z.imag();
      kq[(size_t)2 * k] += z.real() * z.real(), kq[(size_t)2 * k + 1] += z.imag() * z.imag();
    }
  }
  for (int k = 0; k < d; ++k) {
    e.var_q += (qq[(size_t)k] / rows - (qs[(size_t)k] / rows) * (qs[(size_t)k] / rows)) / d;
    e.var_k += (kq[(size_t)k] / cols - (ks[(size_t)k] / cols) * (ks[(size_t)k] / cols)) / d;
  }
  expected_spectra(e, rows, cols, cu, d, cn, de);
  return e;
}


}  // namespace

TEST_CASE("AFA and RT-RFA heads: head_diagnostics against the readout twin and the definitions") {
  struct Case {
    const char* name;
    int head;
    double alpha;
    bool decayed;
  };
  const int d_e = 20, N = 41;
  for (const Case& c : {Case{"AFA channel_sum", 1, 1.0, true}, Case{"AFA unitary weighted", 2, 1.9, false},
                        Case{"RT-RFA Student-t stationary", 1, 0.7, false}, Case{"RT-RFA Gaussian ou_rate", 2, 1.0, true}}) {
    const std::string name = c.name;
    CAPTURE(name);
    std::mt19937 rng(77);
    const AttentionParams p =
        name == "AFA channel_sum"        ? make_afa_params(3, 4, rng)
        : name == "AFA unitary weighted" ? make_afa_params(3, 4, rng, AfaPrecision::weighted, true)
        : name.find("Gaussian") != std::string::npos
            ? make_rt_params(3, 4, rng, RtCovariance::ou_rate, RtKernel::gaussian)
            : make_rt_params(3, 4, rng);
    auto m = variant_model(p, d_e, 31);
    const auto x = random_values((size_t)N * d_e, 32);
    const auto t = irregular(N, 33);
    auto s = run(m, x, N, t);
    DiagnosticsRequest r;
    r.head = c.head;
    r.r0 = 4, r.r1 = N, r.c0 = 1, r.c1 = 37;
    r.alpha = c.alpha;
    r.decayed = c.decayed;
    r.sweep = {0.5, 3.0};
    const HeadDiagnostics d = diagnose(*s, r);
    const Expected e = expected(*m, x, N, t, c.head, 4, N, 1, 37, c.alpha, c.decayed);
    CHECK(d.d == 8);
    check_diagnostics(d, e);
    if (p.variant == AttentionVariant::rt) {
      // RT-RFA scores unit directions: every tau is 1 / sqrt(2D), the radius its logit never sees.
      for (const QueryDiagnostics& q : d.rows) CHECK(q.tau == doctest::Approx(1.0 / std::sqrt(8.0)).epsilon(1e-6));
    }
    // The sweep's points are the same computation at their alpha; sharper rows never gain entropy.
    REQUIRE(d.sweep.size() == 2);
    for (const SweepPoint& sp : d.sweep) {
      CAPTURE(sp.alpha);
      const Expected es = expected(*m, x, N, t, c.head, 4, N, 1, 37, sp.alpha, c.decayed);
      CHECK(sp.entropy == doctest::Approx(es.entropy_mean).epsilon(1e-4));
      CHECK(sp.erank == doctest::Approx(es.erank).epsilon(1e-4));
    }
    CHECK(d.sweep[0].entropy >= d.sweep[1].entropy);
    // alpha = 1 is the probes' own softmax: the row diagnostics agree.
    DiagnosticsRequest one = r;
    one.alpha = 1.0;
    one.sweep.clear();
    const HeadDiagnostics d1 = diagnose(*s, one);
    const double th[4] = {1, 2, 4, 8};
    auto rd = rfa::Inspector(*s).row_diagnostics(0, c.head, 0, 4, N, th);
    REQUIRE_MESSAGE(rd.ok(), rd.status().to_string());
    for (size_t k = 0; k < rd->size(); ++k) {
      CHECK(d1.rows[k].entropy == doctest::Approx((*rd)[k].entropy).epsilon(1e-5).scale(1e-5));
      CHECK(d1.rows[k].log_partition == doctest::Approx((*rd)[k].log_partition).epsilon(1e-5));
    }
  }
}

TEST_CASE("AFA and RT-RFA heads in a sliding window: the window report and the tomography of the ring") {
  // A stream longer than the ring: the report's bounds are the head's own (AFA: the channel-mean
  // decay of its A and 1 / (nu v^C); RT-RFA: no decay, so the bound is 1, and P between unit
  // magnitudes), its edge mass is the twin's A over the oldest eighth of the band, and the
  // tomography of the last rows (whole bands in the ring) equals the twin's rows.
  const int d_e = 16, N = 70, W = 12;
  for (AttentionVariant v : {AttentionVariant::afa, AttentionVariant::rt}) {
    CAPTURE((int)v);
    std::mt19937 rng(91);
    const AttentionParams p = v == AttentionVariant::afa ? make_afa_params(2, 4, rng) : make_rt_params(2, 4, rng);
    auto m = variant_model(p, d_e, 92);
    const auto x = random_values((size_t)N * d_e, 93);
    const auto t = irregular(N, 94);
    SessionOptions o;
    o.window = W;
    auto S = Session::create(context(), m, o);
    REQUIRE(S.ok());
    for (int i0 = 0; i0 < N; i0 += 5) {  // in calls of 5 positions
      const int n = std::min(5, N - i0);
      REQUIRE((*S)->prefill_values(std::vector<float>(x.begin() + (size_t)i0 * d_e, x.begin() + (size_t)(i0 + n) * d_e),
                                   n, std::vector<double>(t.begin() + i0, t.begin() + i0 + n))
                  .ok());
    }
    REQUIRE((*S)->oldest_position() > 0);
    auto rep = rfa::Inspector(**S).window_report(0, true);
    REQUIRE_MESSAGE(rep.ok(), rep.status().to_string());
    REQUIRE(rep->size() == 2);
    const AttentionLayer& L = m->single;
    const auto Q = ref::split_complex(ref::linear(L.wq, std::vector<double>(x.begin(), x.end()), N), N, 2, 4);
    const auto K = ref::split_complex(ref::linear(L.wk, std::vector<double>(x.begin(), x.end()), N), N, 2, 4);
    const auto V = ref::split_complex(ref::linear(L.wv, std::vector<double>(x.begin(), x.end()), N), N, 2, 4);
    const int i = N - 1, k8 = i - W + std::max(1, W / 8);
    const double edge = t[(size_t)i] - t[(size_t)(i - W)];
    for (const WindowTruncation& w : *rep) {
      CAPTURE(w.head);
      CHECK(w.edge_lag == doctest::Approx(edge));
      auto cv = head_curves(*m, 0, w.head, {0.0, edge});
      REQUIRE(cv.ok());
      CHECK(w.decay_bound == doctest::Approx(v == AttentionVariant::afa ? cv->decay[1] : 1.0));
      CHECK(w.precision_ratio == doctest::Approx(cv->precision[1] / cv->precision[0]));
      ref::ReadoutRow row;
      const Status s = v == AttentionVariant::afa
                           ? ref::afa_readout_row(ref::afa_twin_params(p), 1, N, Q, K, t, W, 0, w.head, i, &row)
                           : ref::rt_readout_row(ref::rt_twin_params(p), 1, N, Q, K, V, t, W, 0, w.head, i, &row);
      REQUIRE_MESSAGE(s.ok(), s.to_string());
      const double thr[4] = {0, 0, 0, 0};
      const ref::ReadoutStats st = ref::readout_stats(row, 1.0, p.dim, thr);
      double mass = 0;
      for (size_t k = 0; k < row.keys.size(); ++k)
        if (row.keys[k].j <= k8) mass += st.p[k] * row.keys[k].decay;
      CHECK(w.edge_mass == doctest::Approx(mass).epsilon(1e-3).scale(1e-6));
      // The ring's last rows, each with its whole band.
      DiagnosticsRequest r;
      r.head = w.head;
      r.r0 = -5;
      r.c0 = (*S)->oldest_position();
      const HeadDiagnostics d = diagnose(**S, r);
      REQUIRE(d.rows.size() == 5);
      for (const QueryDiagnostics& q : d.rows) {
        CAPTURE(q.position);
        ref::ReadoutRow qr;
        const Status qs = v == AttentionVariant::afa
                              ? ref::afa_readout_row(ref::afa_twin_params(p), 1, N, Q, K, t, W, 0, w.head, q.position, &qr)
                              : ref::rt_readout_row(ref::rt_twin_params(p), 1, N, Q, K, V, t, W, 0, w.head, q.position, &qr);
        REQUIRE(qs.ok());
        const ref::ReadoutStats qst = ref::readout_stats(qr, 1.0, p.dim, thr);
        CHECK(q.keys == W);
        CHECK(q.entropy == doctest::Approx(qst.entropy).epsilon(1e-4).scale(1e-5));
        CHECK(q.log_partition == doctest::Approx(qst.log_partition).epsilon(1e-4).scale(1e-5));
        CHECK(q.mean_s == doctest::Approx(qst.mean_s).epsilon(1e-3).scale(1e-4));
      }
    }
  }
}
