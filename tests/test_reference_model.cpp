// The CPU twin's network forward (reference/model_ref) on small random models built in code:
// every architecture runs and stays finite, the attention architecture and one block match a
// composition by hand, and the reference's structural choices hold (outer residual off discards
// the attention, tied lm head, causality, timestamps, probes, errors).
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "cpu_test_support.hpp"
#include "model/model.hpp"
#include "reference/attention_ref.hpp"
#include "reference/model_ref.hpp"
#include "reference/ops_ref.hpp"
#include "model_factory.hpp"

using namespace rfa;
using cd = std::complex<double>;
using rfa::test::make_model;
using rfa::test::make_attention;
using rfa::test::make_linear;
using rfa::test::make_norm;
using rfa::test::make_params;
using rfa::test::tensor;

namespace {

using rfa::test::all_finite;
using rfa::test::max_abs_diff;

std::vector<double> random_reals(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> x(n);
  for (double& v : x) v = g(rng);
  return x;
}

std::vector<int64_t> random_ids(size_t n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, vocab - 1);
  std::vector<int64_t> ids(n);
  for (auto& x : ids) x = u(rng);
  return ids;
}

}  // namespace

TEST_CASE("every architecture runs on a small random model without NaN") {
  const int B = 2, N = 7;
  for (NormKind nk : {NormKind::layer_norm, NormKind::rms_norm, NormKind::none}) {
    CAPTURE((int)nk);
    const Model lm = make_model(Architecture::lm, 1, 2, nk);
    const auto ids = random_ids((size_t)B * N, lm.vocab, 2);
    auto r = ref::forward(lm, B, N, nullptr, ids.data(), nullptr);
    REQUIRE(r.ok());
    CHECK(r->size() == (size_t)B * N * lm.vocab);
    CHECK(all_finite(r.value()));

    const Model sig = make_model(Architecture::signal, 3, 3, nk);
    const auto x = random_reals((size_t)B * N * sig.d_in, 4);
    std::vector<double> t((size_t)B * N);
    for (size_t k = 0; k < t.size(); ++k) t[k] = 0.37 * (double)(k % N) * (1 + (double)(k / N));
    auto s = ref::forward(sig, B, N, x.data(), nullptr, t.data());
    REQUIRE(s.ok());
    CHECK(s->size() == (size_t)B * N * sig.d_in);
    CHECK(all_finite(s.value()));
  }
  const Model att = make_model(Architecture::attention, 5);
  const auto x = random_reals((size_t)B * N * att.d_e, 6);
  auto a = ref::forward(att, B, N, x.data(), nullptr, nullptr);
  REQUIRE(a.ok());
  CHECK(a->size() == (size_t)B * N * att.d_e);
  CHECK(all_finite(a.value()));
}

TEST_CASE("the attention architecture equals projections + attention_ref + W_o by hand") {
  const int B = 2, N = 6;
  const Model m = make_model(Architecture::attention, 11);
  const AttentionLayer& L = m.single;
  const int H = L.params.heads, D = L.params.dim, d_e = m.d_e, HD = H * D;
  const auto x = random_reals((size_t)B * N * d_e, 12);
  std::vector<double> t((size_t)B * N);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) t[(size_t)b * N + i] = 1.5 * i + 0.25 * i * i * b;

  // Projections with the half-split by hand: Re = q[h*D+d], Im = q[HD + h*D+d].
  auto project = [&](const LinearWeights& w) {
    std::vector<cd> Z((size_t)B * N * HD);
    for (int n = 0; n < B * N; ++n)
      for (int k = 0; k < HD; ++k) {
        double re = w.bias.data[(size_t)k], im = w.bias.data[(size_t)(HD + k)];
        for (int c = 0; c < d_e; ++c) {
          re += (double)w.weight.data[(size_t)k * d_e + c] * x[(size_t)n * d_e + c];
          im += (double)w.weight.data[(size_t)(HD + k) * d_e + c] * x[(size_t)n * d_e + c];
        }
        Z[(size_t)n * HD + k] = cd(re, im);
      }
    return Z;
  };
  const auto Q = project(L.wq), K = project(L.wk), V = project(L.wv);
  ref::AttentionOutputs o;
  REQUIRE(ref::attention(L.params, B, N, Q, K, V, t, &o).ok());
  // W_o on [Re(est) | Im(est)].
  std::vector<double> expect((size_t)B * N * d_e);
  for (int n = 0; n < B * N; ++n)
    for (int c = 0; c < d_e; ++c) {
      double acc = L.wo.bias.data[(size_t)c];
      for (int k = 0; k < HD; ++k) {
        acc += (double)L.wo.weight.data[(size_t)c * 2 * HD + k] * o.est[(size_t)n * HD + k].real();
        acc += (double)L.wo.weight.data[(size_t)c * 2 * HD + HD + k] * o.est[(size_t)n * HD + k].imag();
      }
      expect[(size_t)n * d_e + c] = acc;
    }
  auto r = ref::forward(m, B, N, x.data(), nullptr, t.data());
  REQUIRE(r.ok());
  CHECK(max_abs_diff(r.value(), expect) < 1e-12);

  // The ops' split and pack are inverse to each other and match the layout above.
  const auto q = ref::linear(L.wq, x, B * N);
  const auto Qs = ref::split_complex(q, B * N, H, D);
  for (size_t k = 0; k < Q.size(); ++k) CHECK(std::abs(Qs[k] - Q[k]) < 1e-12);
  CHECK(max_abs_diff(ref::pack_complex(Qs, B * N, H, D), q) == 0.0);
}

TEST_CASE("one block of the signal model matches the pre-norm block composed by hand") {
  const int B = 1, N = 5;
  const Model m = make_model(Architecture::signal, 21, 1);
  const Block& blk = m.blocks[0];
  const int d_e = m.d_e, rows = B * N;
  const auto u = random_reals((size_t)rows * m.d_in, 22);
  const std::vector<double> t;  // 0..N-1

  std::vector<double> x = ref::linear(m.signal_in, u, rows);
  x = ref::linear(m.backbone_in, x, rows);
  // h = LayerNorm1(x) by hand
  std::vector<double> h((size_t)rows * d_e);
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < d_e; ++c) mean += x[(size_t)r * d_e + c] / d_e;
    for (int c = 0; c < d_e; ++c) var += std::pow(x[(size_t)r * d_e + c] - mean, 2) / d_e;
    for (int c = 0; c < d_e; ++c)
      h[(size_t)r * d_e + c] = (x[(size_t)r * d_e + c] - mean) / std::sqrt(var + 1e-5) * blk.norm1.weight.data[(size_t)c] +
                               blk.norm1.bias.data[(size_t)c];
  }
  auto a = ref::attention_layer(blk.attn, B, N, h, t);
  REQUIRE(a.ok());
  x = ref::add(x, a.value());
  const auto h2 = ref::layer_norm(x, rows, d_e, 1e-5, blk.norm2.weight, blk.norm2.bias);
  auto f = ref::linear(blk.ffn1, h2, rows);
  for (double& v : f) v = std::max(v, 0.0);
  x = ref::add(x, ref::linear(blk.ffn2, f, rows));
  x = ref::layer_norm(x, rows, d_e, 1e-5, m.final_norm.weight, m.final_norm.bias);
  x = ref::linear(m.backbone_out, x, rows);
  const auto expect = ref::linear(m.signal_out, x, rows);

  ref::ModelProbe probe;
  probe.keep_hidden = true;
  auto r = ref::forward(m, B, N, u.data(), nullptr, nullptr, &probe);
  REQUIRE(r.ok());
  CHECK(max_abs_diff(r.value(), expect) < 1e-12);
  CHECK(probe.hidden.size() == 2);
  CHECK(probe.layer_outputs.size() == 1);
  CHECK(max_abs_diff(probe.layer_outputs[0], a.value()) < 1e-12);
}

TEST_CASE("outer residual off discards the attention output (reference semantics)") {
  const int B = 1, N = 6;
  Model m1 = make_model(Architecture::signal, 31, 2);
  Model m2 = m1;
  for (float& w : m2.blocks[0].attn.wq.weight.data) w *= -1.7f;  // a different attention in block 0
  for (float& w : m2.blocks[1].attn.wv.weight.data) w *= 0.3f;   // and in block 1
  const auto u = random_reals((size_t)B * N * m1.d_in, 32);
  auto r1 = ref::forward(m1, B, N, u.data(), nullptr, nullptr);
  auto r2 = ref::forward(m2, B, N, u.data(), nullptr, nullptr);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(max_abs_diff(r1.value(), r2.value()) > 1e-6);  // with the residual the attention matters
  for (Model* m : {&m1, &m2})
    for (Block& b : m->blocks) b.outer_residual = false;
  r1 = ref::forward(m1, B, N, u.data(), nullptr, nullptr);
  r2 = ref::forward(m2, B, N, u.data(), nullptr, nullptr);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(max_abs_diff(r1.value(), r2.value()) == 0.0);
}

TEST_CASE("lm: tied head, causality, timestamps, probes") {
  SUBCASE("no blocks, identity projections, no norm: logits = E[id] . E[v] + bias") {
    Model m = make_model(Architecture::lm, 41, 0, NormKind::none);
    for (LinearWeights* w : {&m.backbone_in, &m.backbone_out}) {
      std::fill(w->weight.data.begin(), w->weight.data.end(), 0.0f);
      for (int k = 0; k < m.d_e; ++k) w->weight.data[(size_t)k * m.d_e + k] = 1.0f;
      std::fill(w->bias.data.begin(), w->bias.data.end(), 0.0f);
    }
    const std::vector<int64_t> ids = {3, 0, 10};
    auto r = ref::forward(m, 1, 3, nullptr, ids.data(), nullptr);
    REQUIRE(r.ok());
    for (int i = 0; i < 3; ++i)
      for (int v = 0; v < m.vocab; ++v) {
        double dot = m.lm_head_bias.data[(size_t)v];
        for (int c = 0; c < m.d_e; ++c)
          dot += (double)m.token_embedding.data[(size_t)ids[(size_t)i] * m.d_e + c] *
                 m.token_embedding.data[(size_t)v * m.d_e + c];
        CHECK(r.value()[(size_t)i * m.vocab + v] == doctest::Approx(dot).epsilon(1e-12));
      }
  }
  SUBCASE("causal: later tokens do not change earlier logits") {
    const Model m = make_model(Architecture::lm, 42, 2);
    const int N = 8;
    auto ids = random_ids(N, m.vocab, 43);
    auto r1 = ref::forward(m, 1, N, nullptr, ids.data(), nullptr);
    ids[5] = (ids[5] + 1) % m.vocab;
    auto r2 = ref::forward(m, 1, N, nullptr, ids.data(), nullptr);
    REQUIRE(r1.ok());
    REQUIRE(r2.ok());
    for (size_t k = 0; k < (size_t)5 * m.vocab; ++k) CHECK(r1.value()[k] == r2.value()[k]);
    double later = 0;
    for (size_t k = (size_t)5 * m.vocab; k < (size_t)N * m.vocab; ++k)
      later = std::fmax(later, std::fabs(r1.value()[k] - r2.value()[k]));
    CHECK(later > 1e-6);
  }
  SUBCASE("null timestamps mean 0..N-1; probes capture normalised attention") {
    const Model m = make_model(Architecture::lm, 44, 2);
    const int B = 2, N = 6;
    const auto ids = random_ids((size_t)B * N, m.vocab, 45);
    std::vector<double> t((size_t)B * N);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < N; ++i) t[(size_t)b * N + i] = i;
    ref::ModelProbe probe;
    probe.requests = {{1, 0}, {0, 1}};
    auto r1 = ref::forward(m, B, N, nullptr, ids.data(), nullptr, &probe);
    auto r2 = ref::forward(m, B, N, nullptr, ids.data(), t.data());
    REQUIRE(r1.ok());
    REQUIRE(r2.ok());
    CHECK(max_abs_diff(r1.value(), r2.value()) == 0.0);
    REQUIRE(probe.captures.size() == 2);
    CHECK(probe.captures[0].layer == 1);
    CHECK(probe.captures[1].head == 1);
    for (const auto& c : probe.captures) {
      REQUIRE(c.Ahat.size() == (size_t)B * N * N);
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < N; ++i) {
          double s = 0;
          for (int j = 0; j < N; ++j) s += c.Ahat[((size_t)b * N + i) * N + j];
          CHECK(s == doctest::Approx(1.0).epsilon(1e-13));
          CHECK(c.A[((size_t)b * N + i) * N + i + (i + 1 < N ? 1 : 0)] <= 1.0);
        }
    }
    // Irregular timestamps change the result.
    t[3] += 0.5;
    t[4] += 0.5;
    auto r3 = ref::forward(m, B, N, nullptr, ids.data(), t.data());
    REQUIRE(r3.ok());
    CHECK(max_abs_diff(r1.value(), r3.value()) > 1e-9);
  }
}

TEST_CASE("forward reports bad inputs and malformed models") {
  Model m = make_model(Architecture::lm, 51, 1);
  std::vector<int64_t> ids = {1, 2, 3};
  ids[1] = m.vocab;
  CHECK(ref::forward(m, 1, 3, nullptr, ids.data(), nullptr).status().code() == Code::input_error);
  ids[1] = -1;
  CHECK(ref::forward(m, 1, 3, nullptr, ids.data(), nullptr).status().code() == Code::input_error);
  ids[1] = 2;
  const std::vector<double> t = {0.0, 2.0, 1.0};
  CHECK(ref::forward(m, 1, 3, nullptr, ids.data(), t.data()).status().code() == Code::input_error);
  CHECK(ref::forward(m, 1, 3, nullptr, nullptr, nullptr).status().code() == Code::invalid_argument);
  ref::ModelProbe probe;
  probe.requests = {{1, 0}};  // only one layer
  CHECK(ref::forward(m, 1, 3, nullptr, ids.data(), nullptr, &probe).status().code() == Code::invalid_argument);
  m.blocks[0].ffn2.weight.data.pop_back();
  CHECK(ref::forward(m, 1, 3, nullptr, ids.data(), nullptr).status().code() == Code::model_error);
}
