// Sessions on the GPU against the double-precision CPU twin of the whole network: every
// architecture and norm, batch > 1, irregular timestamps, prefill vs streaming through the KV
// cache, probes of any layer, and the input errors a session must reject.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <thread>

#include "model/model.hpp"
#include "model_factory.hpp"
#include "reference/model_ref.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

test::ModelSpec spec() {
  test::ModelSpec s;
  s.d_e = 24;
  s.heads = 3;
  s.head_dim = 4;  // 2 * H * D = 24
  s.hidden = 40;
  s.vocab = 37;
  s.d_in = 5;
  return s;
}

std::shared_ptr<const Model> model(Architecture arch, uint32_t seed, NormKind norm = NormKind::layer_norm,
                                   int blocks = 2) {
  return std::make_shared<Model>(test::make_model(arch, seed, blocks, norm, spec()));
}

std::vector<double> irregular_times(int B, int N, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> gap(0.2, 2.0);
  std::vector<double> t((size_t)B * N);
  for (int b = 0; b < B; ++b) {
    double x = 3.0 * b;
    for (int i = 0; i < N; ++i) t[(size_t)b * N + i] = x += gap(rng);
  }
  return t;
}

struct Inputs {
  std::vector<int64_t> ids;
  std::vector<float> values;
};

Inputs make_inputs(const Model& m, int B, int N, uint32_t seed) {
  Inputs in;
  std::mt19937 rng(seed);
  if (m.arch == Architecture::lm) {
    std::uniform_int_distribution<int> u(0, m.vocab - 1);
    for (int i = 0; i < B * N; ++i) in.ids.push_back(u(rng));
  } else {
    std::normal_distribution<float> g(0.f, 1.f);
    int d = m.arch == Architecture::signal ? m.d_in : m.d_e;
    for (int i = 0; i < B * N * d; ++i) in.values.push_back(g(rng));
  }
  return in;
}

std::vector<double> twin(const Model& m, int B, int N, const Inputs& in, const std::vector<double>& t,
                         ref::ModelProbe* probe = nullptr) {
  std::vector<double> v(in.values.begin(), in.values.end());
  auto r = ref::forward(m, B, N, v.empty() ? nullptr : v.data(), in.ids.empty() ? nullptr : in.ids.data(),
                        t.empty() ? nullptr : t.data(), probe);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return r.take();
}

Status feed(Session& s, const Model& m, const Inputs& in, int B, int N, int pos0, int n, const std::vector<double>& t) {
  std::vector<double> ts;
  if (!t.empty())
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < n; ++i) ts.push_back(t[(size_t)b * N + pos0 + i]);
  if (m.arch == Architecture::lm) {
    std::vector<int64_t> x;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < n; ++i) x.push_back(in.ids[(size_t)b * N + pos0 + i]);
    return s.prefill_tokens(x, n, ts);
  }
  const int d = m.arch == Architecture::signal ? m.d_in : m.d_e;
  std::vector<float> x;
  for (int b = 0; b < B; ++b)
    x.insert(x.end(), in.values.begin() + ((size_t)b * N + pos0) * d, in.values.begin() + ((size_t)b * N + pos0 + n) * d);
  return s.prefill_values(x, n, ts);
}

// Runs [chunks] through a session and returns the outputs as [B][N][out] in double.
std::vector<float> run_session(std::shared_ptr<const Model> m, const Inputs& in, int B, int N,
                               const std::vector<double>& t, const std::vector<int>& chunks, Session** keep = nullptr,
                               std::unique_ptr<Session>* owner = nullptr) {
  SessionOptions o;
  o.batch = B;
  o.max_context = N;
  auto s = Session::create(test::context(), m, o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const int V = (*s)->output_dim();
  std::vector<std::vector<float>> rows((size_t)B);
  int pos = 0;
  for (int c : chunks) {
    Status st = feed(**s, *m, in, B, N, pos, c, t);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    for (int b = 0; b < B; ++b)
      rows[(size_t)b].insert(rows[(size_t)b].end(), (*s)->outputs().begin() + (size_t)b * c * V,
                             (*s)->outputs().begin() + (size_t)(b + 1) * c * V);
    pos += c;
  }
  std::vector<float> out;
  for (auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  if (owner) *owner = s.take();
  (void)keep;
  return out;
}

}  // namespace

TEST_CASE("GPU sessions match the CPU twin for every architecture and norm") {
  struct Case {
    Architecture arch;
    NormKind norm;
    int B, N;
    bool irregular;
  };
  const Case cases[] = {
      {Architecture::lm, NormKind::layer_norm, 2, 61, false},
      {Architecture::lm, NormKind::rms_norm, 1, 33, true},
      {Architecture::signal, NormKind::layer_norm, 2, 47, true},
      {Architecture::signal, NormKind::none, 1, 20, false},
      {Architecture::attention, NormKind::none, 2, 29, true},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(std::string(architecture_name(c.arch)));
    CAPTURE((int)c.norm);
    auto m = model(c.arch, seed++, c.norm);
    Inputs in = make_inputs(*m, c.B, c.N, seed++);
    std::vector<double> t = c.irregular ? irregular_times(c.B, c.N, seed++) : std::vector<double>{};
    std::vector<double> ref = twin(*m, c.B, c.N, in, t);
    std::vector<float> gpu = run_session(m, in, c.B, c.N, t, {c.N});
    CHECK_CLOSE_VEC(gpu, ref, 2e-4, 2e-4);
  }
}

TEST_CASE("streaming through the KV cache equals one prefill") {
  for (Architecture arch : {Architecture::lm, Architecture::signal}) {
    CAPTURE(std::string(architecture_name(arch)));
    auto m = model(arch, 40 + (uint32_t)arch);
    const int B = 2, N = 37;
    Inputs in = make_inputs(*m, B, N, 7);
    std::vector<double> t = irregular_times(B, N, 9);
    std::vector<float> prefill = run_session(m, in, B, N, t, {N});
    std::vector<float> stream = run_session(m, in, B, N, t, std::vector<int>(N, 1));
    std::vector<float> mixed = run_session(m, in, B, N, t, {10, 1, 1, 20, 5});
    std::vector<double> p(prefill.begin(), prefill.end());
    CHECK_CLOSE_VEC(stream, p, 1e-4, 1e-4);
    CHECK_CLOSE_VEC(mixed, p, 1e-4, 1e-4);
  }
}

TEST_CASE("last_output_only computes the head for each row's last position only") {
  for (Architecture arch : {Architecture::lm, Architecture::signal, Architecture::attention}) {
    CAPTURE(std::string(architecture_name(arch)));
    auto m = model(arch, 90 + (uint32_t)arch, NormKind::layer_norm);
    const int B = 2, N = 13;
    Inputs in = make_inputs(*m, B, N, 3);
    std::vector<float> full = run_session(m, in, B, N, {}, {N});
    SessionOptions o;
    o.batch = B;
    o.max_context = N;
    o.last_output_only = true;
    auto s = Session::create(test::context(), m, o);
    REQUIRE(s.ok());
    REQUIRE(feed(**s, *m, in, B, N, 0, N, {}).ok());
    CHECK((*s)->output_count() == 1);
    const int V = (*s)->output_dim();
    std::vector<double> want;
    for (int b = 0; b < B; ++b)
      want.insert(want.end(), full.begin() + ((size_t)b * N + N - 1) * V, full.begin() + ((size_t)b * N + N) * V);
    CHECK_CLOSE_VEC((*s)->outputs(), want, 1e-5, 1e-5);
  }
}

TEST_CASE("a prefill too large for one call is split into chunks with the same result") {
  auto m = model(Architecture::lm, 321);
  const int B = 2, N = 40;
  Inputs in = make_inputs(*m, B, N, 4);
  std::vector<double> t = irregular_times(B, N, 5);
  std::vector<float> one = run_session(m, in, B, N, t, {N});
  SessionOptions o;
  o.batch = B;
  o.max_context = N;
  o.max_output_bytes = 7 * B * m->vocab * 4;  // 7 positions per call
  auto s = Session::create(test::context(), m, o);
  REQUIRE(s.ok());
  REQUIRE(feed(**s, *m, in, B, N, 0, N, t).ok());
  CHECK((*s)->output_count() == N);
  std::vector<double> want(one.begin(), one.end());
  CHECK_CLOSE_VEC((*s)->outputs(), want, 1e-5, 1e-5);
  // A bad token late in the input leaves the session untouched.
  (*s)->reset();
  Inputs bad = in;
  bad.ids[(size_t)N + 35] = m->vocab;
  CHECK(feed(**s, *m, bad, B, N, 0, N, t).code() == Code::input_error);
  CHECK((*s)->position() == 0);
}

TEST_CASE("probes of any layer equal the twin's attention matrices") {
  auto m = model(Architecture::signal, 77);
  const int B = 2, N = 23;
  Inputs in = make_inputs(*m, B, N, 78);
  std::vector<double> t = irregular_times(B, N, 79);
  ref::ModelProbe probe;
  probe.requests = {{1, 2}, {0, 0}};
  twin(*m, B, N, in, t, &probe);
  std::unique_ptr<Session> s;
  run_session(m, in, B, N, t, {N}, nullptr, &s);
  for (const auto& cap : probe.captures) {
    for (int b = 0; b < B; ++b) {
      for (bool decayed : {false, true}) {
        CAPTURE(cap.layer);
        CAPTURE(b);
        CAPTURE(decayed);
        const int r0 = 3, r1 = 19, c0 = 1, c1 = 17;  // a sub-rectangle
        auto a = rfa::Inspector(*s).attention(cap.layer, cap.head, b, r0, r1, c0, c1, decayed);
        REQUIRE_MESSAGE(a.ok(), a.status().to_string());
        std::vector<double> ref;
        const auto& full = decayed ? cap.A : cap.Ahat;
        for (int i = r0; i < r1; ++i)
          for (int j = c0; j < c1; ++j) ref.push_back(full[((size_t)b * N + i) * N + j]);
        CHECK_CLOSE_VEC(*a, ref, 1e-5, 1e-4);
      }
    }
  }
  // One pair's readout agrees with the matrices and with the decay curve.
  for (const auto& cap : probe.captures) {
    for (auto [i, j] : {std::pair{5, 2}, std::pair{22, 0}, std::pair{9, 9}, std::pair{3, 7}}) {
      const int row = i, col = j;  // plain copies: CAPTURE cannot name a structured binding (clang 14)
      CAPTURE(cap.layer);
      CAPTURE(row);
      CAPTURE(col);
      auto r = rfa::Inspector(*s).pair(cap.layer, cap.head, 1, i, j);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      CHECK(r->masked == (j > i));
      CHECK(r->lag == doctest::Approx(t[(size_t)N + i] - t[(size_t)N + j]));
      CHECK(r->ahat == doctest::Approx(cap.Ahat[((size_t)N + i) * N + j]).epsilon(1e-4).scale(1e-6));
      CHECK(r->a == doctest::Approx(cap.A[((size_t)N + i) * N + j]).epsilon(1e-4).scale(1e-6));
    }
  }
  // Out-of-range probes are errors, not crashes.
  CHECK(rfa::Inspector(*s).attention(2, 0, 0, 0, 1, 0, 1, false).status().code() == Code::invalid_argument);
  CHECK(rfa::Inspector(*s).attention(0, 0, 0, 0, N + 1, 0, 1, false).status().code() == Code::invalid_argument);
  double th[4] = {1, 2, 4, 8};
  auto d = rfa::Inspector(*s).row_diagnostics(0, 1, 1, 0, N, th);
  REQUIRE_MESSAGE(d.ok(), d.status().to_string());
  for (const auto& r : *d) {
    CHECK(r.max_weight <= 1.0 + 1e-5);
    CHECK(r.entropy >= -1e-5);
    CHECK(r.mass_beyond[0] >= r.mass_beyond[3] - 1e-6);
  }
  auto c = rfa::Inspector(*s).curves(1, 0, {0.0, 1.0, 2.5, 10.0});
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  CHECK(c->decay.size() == 4);
  CHECK(c->decay[0] >= c->decay[3]);

  // The 0.1 calls on Session, kept for one release, forward to the Inspector: the same results.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  auto old_a = s->attention(1, 2, 1, 3, 19, 1, 17, true);
  auto old_p = s->pair(1, 2, 1, 9, 4);
  auto old_d = s->row_diagnostics(0, 1, 1, 0, N, th);
  const int old_first = s->first_full_row();
  const std::vector<double> old_t = s->timestamps(1);
#pragma GCC diagnostic pop
  auto new_a = rfa::Inspector(*s).attention(1, 2, 1, 3, 19, 1, 17, true);
  auto new_p = rfa::Inspector(*s).pair(1, 2, 1, 9, 4);
  REQUIRE(old_a.ok());
  REQUIRE(new_a.ok());
  CHECK(*old_a == *new_a);
  REQUIRE(old_p.ok());
  CHECK(old_p->logit == new_p->logit);
  REQUIRE(old_d.ok());
  CHECK((*old_d)[5].entropy == (*d)[5].entropy);
  CHECK(old_first == rfa::Inspector(*s).first_full_row());
  CHECK(old_t == rfa::Inspector(*s).timestamps(1));
  CHECK(old_t.size() == (size_t)N);
}

TEST_CASE("sessions reject bad input with clear errors") {
  auto lm = model(Architecture::lm, 5);
  SessionOptions o;
  o.max_context = 8;
  auto s = Session::create(test::context(), lm, o);
  REQUIRE(s.ok());
  Status st = (*s)->prefill_tokens({1, 2, 99}, 3);
  CHECK(st.code() == Code::input_error);
  CHECK(st.message().find("99") != std::string::npos);
  CHECK((*s)->position() == 0);  // nothing half-done
  st = (*s)->prefill_tokens({1, 2, 3}, 3, {0.0, 2.0, 1.0});
  CHECK(st.code() == Code::input_error);
  CHECK(st.message().find("decrease") != std::string::npos);
  REQUIRE((*s)->prefill_tokens({1, 2, 3, 4, 5}, 5).ok());
  st = (*s)->prefill_tokens({1, 2, 3, 4}, 4);
  CHECK(st.code() == Code::input_error);
  CHECK(st.message().find("max context") != std::string::npos);
  st = (*s)->step_tokens({1}, {2.0});  // earlier than position 4's timestamp 4.0
  CHECK(st.code() == Code::input_error);
  CHECK((*s)->prefill_values({1.f, 2.f}, 1).code() == Code::input_error);
  (*s)->reset();
  CHECK((*s)->position() == 0);
  CHECK((*s)->prefill_tokens({1, 2, 3, 4, 5, 6, 7, 8}, 8).ok());
  auto bad = Session::create(test::context(), lm, SessionOptions{0, 8});
  CHECK(bad.status().code() == Code::invalid_argument);
}

TEST_CASE("two sessions run on one context from two threads") {
  auto m = model(Architecture::signal, 555);
  const int B = 1, N = 30;
  Inputs in = make_inputs(*m, B, N, 8);
  std::vector<float> want = run_session(m, in, B, N, {}, {N});
  std::vector<double> w(want.begin(), want.end());
  std::vector<float> got[2];
  Status st[2];
  auto worker = [&](int k) {
    SessionOptions o;
    o.max_context = N;
    auto s = Session::create(test::context(), m, o);
    if (!s) {
      st[k] = s.status();
      return;
    }
    for (int i = 0; i < N && st[k].ok(); ++i) {
      st[k] = feed(**s, *m, in, B, N, i, 1, {});
      if (st[k].ok()) got[k].insert(got[k].end(), (*s)->outputs().begin(), (*s)->outputs().end());
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  for (int k = 0; k < 2; ++k) {
    REQUIRE_MESSAGE(st[k].ok(), st[k].to_string());
    CHECK_CLOSE_VEC(got[k], w, 1e-5, 1e-5);
  }
}

TEST_CASE("a context too large for the device is a clear out-of-memory error") {
  auto m = model(Architecture::lm, 6);
  SessionOptions o;
  o.max_context = 1 << 26;  // 64M positions: far beyond the memory budget and buffer limits
  auto s = Session::create(test::context(), m, o);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == Code::out_of_memory);
  CHECK(s.status().message().find("cache") != std::string::npos);
  // The context is still usable afterwards.
  o.max_context = 16;
  CHECK(Session::create(test::context(), m, o).ok());
}
