// Full AFA and tied iterations through a session (docs/variant-afa-full.md §3, §5): the iterates of
// Inspector::iterates against the twin's trajectory (a prefill, and a stream through a window's ring),
// the attention views of Inspector::attention and row_diagnostics against the twin, the heatmap of a
// channel, the basis consistency ||W_V W_P - I|| against the twin's, the window report of a full head,
// and the readouts that refuse what a layer lacks.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "diagnostics_support.hpp"
#include "model_factory.hpp"
#include "reference/afa_ref.hpp"
#include "reference/ops_ref.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/inspect.hpp"

using namespace rfa;
using namespace rfa::test;
using cd = std::complex<double>;

namespace {

std::shared_ptr<Model> full_model(int d_e, int n, double g, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionParams p = make_afa_params(2, 4, rng, AfaPrecision::channel_sum, false, true);
  p.variant = AttentionVariant::afa_full;
  p.afa.irls_iterations = n;
  p.afa.irls_momentum = g;
  return variant_model(p, d_e, seed);
}

struct TwinRun {
  ref::AfaOutputs o;
  std::vector<cd> Q, K, V;
};
TwinRun twin(const Model& m, const std::vector<float>& x, int N, const std::vector<double>& t, int window) {
  const AttentionLayer& L = m.single;
  const int H = L.params.heads, D = L.params.dim;
  const std::vector<double> xd(x.begin(), x.end());
  TwinRun r;
  r.Q = ref::split_complex(ref::linear(L.wq, xd, N), N, H, D);
  r.K = ref::split_complex(ref::linear(L.wk, xd, N), N, H, D);
  r.V = ref::split_complex(ref::linear(L.wv, xd, N), N, H, D);
  ref::AfaOptions opt;
  opt.want_matrices = opt.want_iterates = true;
  opt.window = window;
  const Status s = ref::afa_forward(ref::afa_twin_params(L.params), 1, N, r.Q, r.K, r.V, t, &r.o, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return r;
}

// Inspector::iterates of rows [r0, r1) of head h against the twin's trajectory z_1 .. z_{n+1}.
void check_iterates(Inspector& in, const Model& m, const TwinRun& r, int N, int h, int r0, int r1) {
  const AttentionParams& p = m.single.params;
  const int n = p.afa.irls_iterations, D = p.dim, H = p.heads, rows = r1 - r0;
  auto got = in.iterates(0, h, 0, r0, r1);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  REQUIRE(got->size() == (size_t)(n + 1) * rows * 2 * D);
  std::vector<double> want;
  for (int k = 0; k <= n; ++k)
    for (int i = r0; i < r1; ++i)
      for (int c = 0; c < D; ++c) {
        const cd z = r.o.iterates[(size_t)k * N * H * D + ((size_t)i * H + h) * D + c];
        want.push_back(z.real());
        want.push_back(z.imag());
      }
  CHECK_CLOSE_VEC(*got, want, 2e-4, 2e-4);
}

}  // namespace

TEST_CASE("full AFA with tied iterations in a session: the iterates, the views and the row diagnostics") {
  const int d_e = 16, N = 40;
  auto m = full_model(d_e, 3, 0.2, 11);
  const auto x = random_values((size_t)N * d_e, 12);
  const auto t = irregular(N, 13);
  auto S = Session::create(context(), m, SessionOptions{});
  REQUIRE(S.ok());
  REQUIRE((*S)->prefill_values(x, N, t).ok());
  const TwinRun r = twin(*m, x, N, t, 0);
  Inspector in(**S);
  const int H = 2, D = 4;
  for (int h = 0; h < H; ++h) {
    CAPTURE(h);
    check_iterates(in, *m, r, N, h, 0, N);
    // The views: a channel's normalised weights, the channel mean, the reweighting map.
    for (int view : {kAllChannels, 1, kReweighting}) {
      CAPTURE(view);
      auto a = in.attention(0, h, 0, 0, N, 0, N, false, view);
      REQUIRE_MESSAGE(a.ok(), a.status().to_string());
      std::vector<double> want((size_t)N * N);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          want[(size_t)i * N + j] = view == kAllChannels ? r.o.attn[((size_t)h * N + i) * N + j]
                                    : view == kReweighting ? r.o.reweight[((size_t)h * N + i) * N + j]
                                                           : r.o.channel_attn[(((size_t)h * D + view) * N + i) * N + j];
      CHECK_CLOSE_VEC(*a, want, 1e-4, 1e-4);
    }
    const double thr[4] = {1, 4, 16, 64};
    auto d = in.row_diagnostics(0, h, 0, 0, N, thr, 2);
    REQUIRE_MESSAGE(d.ok(), d.status().to_string());
    for (int i = 0; i < N; ++i) {  // entropy and largest weight of channel 2's Q_2 row
      double ent = 0, mx = 0;
      for (int j = 0; j <= i; ++j) {
        const double w = r.o.channel_attn[(((size_t)h * D + 2) * N + i) * N + j];
        if (w > 0) ent -= w * std::log(w);
        mx = std::max(mx, w);
      }
      CHECK((*d)[(size_t)i].entropy == doctest::Approx(ent).epsilon(2e-4));
      CHECK((*d)[(size_t)i].max_weight == doctest::Approx(mx).epsilon(2e-4));
      CHECK((*d)[(size_t)i].log_partition == doctest::Approx(r.o.row_lse[(size_t)h * N + i]).epsilon(2e-4));
    }
    CHECK(in.row_diagnostics(0, h, 0, 0, N, thr, kReweighting).status().code() == Code::invalid_argument);
    CHECK(in.attention(0, h, 0, 0, N, 0, N, false, D).status().code() == Code::invalid_argument);
  }
  // A channel's map drawn as a heatmap: the probe's pixels are that channel's weights.
  auto map = Heatmap::create(context(), N, N);
  REQUIRE(map.ok());
  HeatmapRequest req;
  req.r0 = req.c0 = 0;
  req.r1 = req.c1 = N;
  req.channel = 3;
  CHECK(in.render_attention(**map, req).ok());
  req.channel = 7;
  CHECK_FALSE(in.render_attention(**map, req).ok());
}

TEST_CASE("tied iterations stream through a window's ring: the iterates of the rows still cached") {
  const int d_e = 16, N = 60, W = 9;
  auto m = full_model(d_e, 2, 0.0, 21);
  const auto x = random_values((size_t)N * d_e, 22);
  const auto t = irregular(N, 23);
  SessionOptions o;
  o.window = W;
  auto S = Session::create(context(), m, o);
  REQUIRE(S.ok());
  for (int i0 = 0; i0 < N; i0 += 4) {
    const int n = std::min(4, N - i0);
    REQUIRE((*S)->prefill_values(std::vector<float>(x.begin() + (size_t)i0 * d_e, x.begin() + (size_t)(i0 + n) * d_e), n,
                                 std::vector<double>(t.begin() + i0, t.begin() + i0 + n))
                .ok());
  }
  REQUIRE((*S)->oldest_position() > 0);
  const TwinRun r = twin(*m, x, N, t, W);
  Inspector in(**S);
  check_iterates(in, *m, r, N, 1, (*S)->oldest_position(), N);
  // The window report of a full head: its bounds are its own curves' (the channel-mean decay, the
  // mean precision), its edge mass the twin's mean decayed weight over the oldest eighth.
  auto rep = in.window_report(0, true);
  REQUIRE_MESSAGE(rep.ok(), rep.status().to_string());
  const int i = N - 1;
  const double edge = t[(size_t)i] - t[(size_t)(i - W)];
  for (const WindowTruncation& w : *rep) {
    auto cv = head_curves(*m, 0, w.head, {0.0, edge});
    REQUIRE(cv.ok());
    CHECK(w.decay_bound == doctest::Approx(cv->decay[1]));
    CHECK(w.precision_ratio == doctest::Approx(cv->precision[1] / cv->precision[0]));
    CHECK(w.edge_mass >= 0.0);
    CHECK(w.edge_mass <= 1.0);
  }
}

TEST_CASE("the basis consistency ||W_V W_P - I|| equals the twin's; layers without iterations refuse iterates") {
  auto m = full_model(16, 1, 0.0, 31);
  const AttentionLayer& L = m->single;
  const int HD = 8, de = 16;
  std::vector<cd> WV((size_t)HD * de), WP((size_t)de * HD);
  for (int r = 0; r < HD; ++r)
    for (int x = 0; x < de; ++x)
      WV[(size_t)r * de + x] = cd(L.wv.weight.data[(size_t)r * de + x], L.wv.weight.data[(size_t)(HD + r) * de + x]);
  for (int x = 0; x < de; ++x)
    for (int c = 0; c < HD; ++c)
      WP[(size_t)x * HD + c] = cd(L.wo.weight.data[(size_t)x * 2 * HD + c], -L.wo.weight.data[(size_t)x * 2 * HD + HD + c]);
  auto want = ref::afa_basis_consistency(WV, WP, HD, de);
  REQUIRE(want.ok());
  auto got = basis_consistency(*m, 0);
  REQUIRE(got.ok());
  CHECK(*got == doctest::Approx(*want).epsilon(1e-12));
  CHECK(*got > 0.1);  // random maps are far from inverse to each other
  CHECK(basis_consistency(*m, 1).status().code() == Code::invalid_argument);
  auto S = Session::create(context(), m, SessionOptions{});
  REQUIRE(S.ok());
  REQUIRE((*S)->prefill_values(random_values(5 * 16, 1), 5, {}).ok());
  const Status s = Inspector(**S).iterates(0, 0, 0, 0, 5).status();
  CHECK(s.code() == Code::unsupported);
  CHECK(s.message().find("tied iterations") != std::string::npos);
}
