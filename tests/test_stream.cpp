// Streaming sessions: the sliding-window KV cache (rings smaller than the stream) against the
// twin's banded causal mask, a fresh prefill of only the positions a windowed output can see,
// timestamps around 1e7, the window report, and the step plans (one recording replayed, one
// submission per step).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>

#include "model/model.hpp"
#include "model_factory.hpp"
#include "reference/model_ref.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/session.hpp"
#include "rfa/frames.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

std::shared_ptr<const Model> model(Architecture arch, uint32_t seed, int blocks = 2) {
  test::ModelSpec s;
  s.d_e = 24;
  s.heads = 3;
  s.head_dim = 4;
  s.hidden = 40;
  s.vocab = 37;
  s.d_in = 5;
  return std::make_shared<Model>(test::make_model(arch, seed, blocks, NormKind::layer_norm, s));
}

struct Stream {
  int B = 1, N = 1, d = 0;
  std::vector<int64_t> ids;
  std::vector<float> values;
  std::vector<double> t;
};

Stream make_stream(const Model& m, int B, int N, uint32_t seed, double t0 = 0.0) {
  Stream s;
  s.B = B;
  s.N = N;
  s.d = m.arch == Architecture::lm ? 0 : (m.arch == Architecture::signal ? m.d_in : m.d_e);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> gap(0.2, 2.0);
  std::normal_distribution<float> g(0.f, 1.f);
  for (int i = 0; i < B * N; ++i) {
    if (m.arch == Architecture::lm) s.ids.push_back(std::uniform_int_distribution<int>(0, m.vocab - 1)(rng));
    for (int k = 0; k < s.d; ++k) s.values.push_back(g(rng));
  }
  for (int b = 0; b < B; ++b) {
    double x = t0 + 3.0 * b;
    for (int i = 0; i < N; ++i) s.t.push_back(x += (i % 5 == 2 ? 0.0 : gap(rng)));
  }
  return s;
}

// Positions [p0, p0 + n) of every row of `s` into the session.
Status feed(Session& S, const Stream& s, int p0, int n) {
  std::vector<double> ts;
  std::vector<int64_t> ids;
  std::vector<float> vals;
  for (int b = 0; b < s.B; ++b)
    for (int i = p0; i < p0 + n; ++i) {
      ts.push_back(s.t[(size_t)b * s.N + i]);
      if (!s.ids.empty()) ids.push_back(s.ids[(size_t)b * s.N + i]);
      for (int k = 0; k < s.d; ++k) vals.push_back(s.values[((size_t)b * s.N + i) * s.d + k]);
    }
  return s.ids.empty() ? S.prefill_values(vals, n, ts) : S.prefill_tokens(ids, n, ts);
}

std::vector<double> twin(const Model& m, const Stream& s, int window, ref::ModelProbe* probe = nullptr) {
  std::vector<double> v(s.values.begin(), s.values.end());
  auto r = ref::forward(m, s.B, s.N, v.empty() ? nullptr : v.data(), s.ids.empty() ? nullptr : s.ids.data(), s.t.data(),
                        probe, window);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return r.take();
}

// Streams `s` in pieces of `chunks` (cycled) through a session with this window; [B][N][out].
std::vector<float> run_windowed(std::shared_ptr<const Model> m, const Stream& s, int window, std::vector<int> chunks,
                                std::unique_ptr<Session>* keep = nullptr) {
  SessionOptions o;
  o.batch = s.B;
  o.window = window;
  o.max_context = 3;  // ignored with a window: the stream is longer than this
  auto S = Session::create(test::context(), m, o);
  REQUIRE_MESSAGE(S.ok(), S.status().to_string());
  const int V = (*S)->output_dim();
  std::vector<std::vector<float>> rows((size_t)s.B);
  for (int p = 0, k = 0; p < s.N; ++k) {
    const int n = std::min(chunks[(size_t)k % chunks.size()], s.N - p);
    Status st = feed(**S, s, p, n);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    for (int b = 0; b < s.B; ++b)
      rows[(size_t)b].insert(rows[(size_t)b].end(), (*S)->outputs().begin() + (size_t)b * n * V,
                             (*S)->outputs().begin() + (size_t)(b + 1) * n * V);
    p += n;
  }
  std::vector<float> out;
  for (auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  if (keep) *keep = S.take();
  return out;
}

}  // namespace

TEST_CASE("a windowed stream equals the whole-sequence prefill with a banded causal mask") {
  // Windows of 1 (each query sees itself), below and above the 256-position chunk of a ring, in
  // steps, in mixed pieces, and in one prefill longer than the ring (split into chunks).
  struct Case {
    Architecture arch;
    int B, N, window;
    std::vector<int> chunks;
  };
  const Case cases[] = {
      {Architecture::signal, 2, 60, 1, {1}},
      {Architecture::signal, 2, 60, 7, {1}},
      {Architecture::lm, 2, 70, 9, {5, 1, 13, 2}},
      {Architecture::lm, 1, 300, 20, {300}},
      {Architecture::attention, 2, 80, 11, {1, 3}},
      {Architecture::signal, 1, 40, 100, {1}},  // a window wider than the stream: plain causal
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    CAPTURE(std::string(architecture_name(c.arch)));
    CAPTURE(c.window);
    CAPTURE(c.N);
    auto m = model(c.arch, seed++);
    const Stream s = make_stream(*m, c.B, c.N, seed++);
    const std::vector<double> want = twin(*m, s, c.window);
    CHECK_CLOSE_VEC(run_windowed(m, s, c.window, c.chunks), want, 2e-4, 2e-4);
    // And it is not the unwindowed result (the test can tell the difference).
    if (c.window < c.N) {
      const std::vector<double> full = twin(*m, s, 0);
      double diff = 0;
      for (size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::fabs(full[i] - want[i]));
      CHECK(diff > 1e-3);
    }
  }
}

TEST_CASE("a model trained with a window (args.attention_window) runs with it by default") {
  // Sessions and the twin with window 0 take the model's own window; an explicit window overrides it.
  auto base = model(Architecture::signal, 91);
  Model windowed = *base;
  windowed.attention_window = 9;
  auto m = std::make_shared<const Model>(windowed);
  CHECK(model_info(*m).attention_window == 9);
  const Stream s = make_stream(*m, 2, 40, 92);
  const std::vector<double> banded = twin(*base, s, 9);
  CHECK(twin(*m, s, 0) == banded);  // the twin's default is the model's window
  std::unique_ptr<Session> S;
  CHECK_CLOSE_VEC(run_windowed(m, s, 0, {1, 6}, &S), banded, 2e-4, 2e-4);
  CHECK(S->window() == 9);
  // An explicit window wins over the model's.
  const std::vector<double> wide = twin(*base, s, 25);
  CHECK(twin(*m, s, 25) == wide);
  CHECK_CLOSE_VEC(run_windowed(m, s, 25, {7}), wide, 2e-4, 2e-4);
  double diff = 0;
  for (size_t i = 0; i < wide.size(); ++i) diff = std::max(diff, std::fabs(wide[i] - banded[i]));
  CHECK(diff > 1e-3);
}

TEST_CASE("accumulated phases stream through the window ring like the twin") {
  // ACC layers (docs/variant-acc.md): the running phase continues across calls and past the ring's
  // wrap (each step reads the phase of the position before it, which the ring always still holds).
  for (Architecture arch : {Architecture::signal, Architecture::lm}) {
    CAPTURE(std::string(architecture_name(arch)));
    Model m = *model(arch, 71);
    for (size_t l = 0; l < m.blocks.size(); ++l) {
      AttentionParams& p = m.blocks[l].attn.params;
      p.phase = l == 0 ? PhaseSource::accumulated_random : PhaseSource::accumulated_rope;
      p.step_seed = 99;
      p.step_layer = (uint32_t)l;
      p.sw.stationary_values = l == 0;
    }
    auto mp = std::make_shared<const Model>(m);
    const Stream s = make_stream(*mp, 2, 45, 72);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 8, {1, 6, 3}), twin(*mp, s, 8), 2e-4, 2e-4);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 100, {45}), twin(*mp, s, 0), 2e-4, 2e-4);  // wider than the stream
  }
}

TEST_CASE("learned accumulated steps stream with the token ids, as the twin") {
  // The session hands each call's token ids to the phase scan; steps, windows and pieces as above.
  Model m = *model(Architecture::lm, 75);
  std::mt19937 rng(76);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (size_t l = 0; l < m.blocks.size(); ++l) {
    AttentionParams& p = m.blocks[l].attn.params;
    p.phase = l == 0 ? PhaseSource::accumulated_learned : PhaseSource::accumulated_random;
    p.step_layer = (uint32_t)l;
    p.step_vocab = m.vocab;
    p.step_table.clear();
    if (l == 0)
      for (int k = 0; k < m.vocab * p.dim; ++k) p.step_table.push_back(u(rng));
  }
  auto mp = std::make_shared<const Model>(m);
  const Stream s = make_stream(*mp, 2, 45, 77);
  CHECK_CLOSE_VEC(run_windowed(mp, s, 8, {1, 6, 3}), twin(*mp, s, 8), 2e-4, 2e-4);
  CHECK_CLOSE_VEC(run_windowed(mp, s, 100, {45}), twin(*mp, s, 0), 2e-4, 2e-4);
}

TEST_CASE("AFA layers stream through the window ring like the AFA twin") {
  // docs/variant-afa.md: every layer an AFA layer (each with other switches), one call per
  // position and mixed pieces, past the ring's wrap, against the model twin with the banded mask.
  for (Architecture arch : {Architecture::signal, Architecture::lm}) {
    CAPTURE(std::string(architecture_name(arch)));
    Model m = *model(arch, 81);
    std::mt19937 rng(82);
    for (size_t l = 0; l < m.blocks.size(); ++l)
      m.blocks[l].attn.params = test::make_afa_params(3, 4, rng, l == 0 ? AfaPrecision::weighted : AfaPrecision::channel_sum,
                                                      false, l == 0);
    auto mp = std::make_shared<const Model>(m);
    const Stream s = make_stream(*mp, 2, 45, 83);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 8, {1, 6, 3}), twin(*mp, s, 8), 2e-4, 2e-4);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 100, {45}), twin(*mp, s, 0), 2e-4, 2e-4);
  }
}

TEST_CASE("RT-RFA layers stream through the window ring like the RT twin") {
  // docs/variant-rt.md: every layer RT-RFA (the two covariances and kernels), the RT block (no norm
  // before the attention, RMSNorm before the FFN), calls of one position and mixed pieces.
  for (Architecture arch : {Architecture::signal, Architecture::lm}) {
    CAPTURE(std::string(architecture_name(arch)));
    Model m = *model(arch, 91);
    std::mt19937 rng(92);
    for (size_t l = 0; l < m.blocks.size(); ++l) {
      m.blocks[l].attn.params = test::make_rt_params(3, 4, rng, l == 0 ? RtCovariance::stationary : RtCovariance::ou_rate,
                                                     l == 0 ? RtKernel::student_t : RtKernel::gaussian);
      m.blocks[l].norm1 = NormWeights{};
    }
    auto mp = std::make_shared<const Model>(m);
    const Stream s = make_stream(*mp, 2, 45, 93);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 8, {1, 6, 3}), twin(*mp, s, 8), 2e-4, 2e-4);
    CHECK_CLOSE_VEC(run_windowed(mp, s, 100, {45}), twin(*mp, s, 0), 2e-4, 2e-4);
  }
}

TEST_CASE("one attention layer: a windowed output equals a fresh prefill of its last window positions") {
  auto m = model(Architecture::attention, 31, 1);
  const int N = 90, W = 16;
  const Stream s = make_stream(*m, 1, N, 32);
  const std::vector<float> stream = run_windowed(m, s, W, {1});
  const int d = m->d_e;
  for (int i : {W - 1, W, 50, N - 1}) {
    CAPTURE(i);
    // Positions [i - W + 1, i] with their original timestamps, in a session without a window.
    Stream part;
    part.B = 1;
    part.d = d;
    const int p0 = std::max(0, i - W + 1);
    part.N = i - p0 + 1;
    part.values.assign(s.values.begin() + (size_t)p0 * d, s.values.begin() + (size_t)(i + 1) * d);
    part.t.assign(s.t.begin() + p0, s.t.begin() + i + 1);
    SessionOptions o;
    o.max_context = part.N;
    o.last_output_only = true;
    auto S = Session::create(test::context(), m, o);
    REQUIRE(S.ok());
    REQUIRE(feed(**S, part, 0, part.N).ok());
    const std::vector<double> want((*S)->outputs().begin(), (*S)->outputs().end());
    const std::vector<float> got(stream.begin() + (size_t)i * d, stream.begin() + (size_t)(i + 1) * d);
    CHECK_CLOSE_VEC(got, want, 1e-4, 1e-4);
  }
}

TEST_CASE("timestamps around 1e7 keep their accuracy through the window") {
  auto m = model(Architecture::signal, 41);
  const Stream s = make_stream(*m, 1, 50, 42, 1.0e7);
  CHECK_CLOSE_VEC(run_windowed(m, s, 6, {1}), twin(*m, s, 6), 2e-4, 2e-4);
}

TEST_CASE("probes, timestamps and the window report of a ring that has wrapped") {
  auto m = model(Architecture::signal, 51);
  const int N = 400, W = 12;
  const Stream s = make_stream(*m, 2, N, 52);
  std::unique_ptr<Session> S;
  run_windowed(m, s, W, {1, 2, 5}, &S);
  CHECK(S->position() == N);
  CHECK(S->window() == W);
  const int oldest = S->oldest_position();
  CHECK(oldest == N - S->max_context());
  CHECK(S->max_context() >= W);
  // Timestamps of the positions still held.
  const std::vector<double> ts = rfa::Inspector(*S).timestamps(1);
  REQUIRE(ts.size() == (size_t)(N - oldest));
  CHECK(ts.back() == s.t[(size_t)N + N - 1]);
  CHECK(ts.front() == s.t[(size_t)N + oldest]);
  // Probes of the newest rows equal the twin's banded matrices; evicted rows are refused.
  ref::ModelProbe probe;
  probe.requests = {{1, 2}};
  twin(*m, s, W, &probe);
  const auto& cap = probe.captures[0];
  for (bool decayed : {false, true}) {
    auto a = rfa::Inspector(*S).attention(1, 2, 1, N - 4, N, oldest, N, decayed);
    REQUIRE_MESSAGE(a.ok(), a.status().to_string());
    std::vector<double> want;
    for (int i = N - 4; i < N; ++i)
      for (int j = oldest; j < N; ++j) want.push_back((decayed ? cap.A : cap.Ahat)[((size_t)N + i) * N + j]);
    CHECK_CLOSE_VEC(*a, want, 1e-5, 1e-4);
  }
  auto evicted = rfa::Inspector(*S).attention(1, 2, 1, 0, 1, 0, 1, false);
  CHECK(evicted.status().code() == Code::invalid_argument);
  CHECK(evicted.status().message().find("still in the cache") != std::string::npos);
  auto pr = rfa::Inspector(*S).pair(1, 2, 1, N - 1, N - 1 - W);  // just outside the band
  REQUIRE(pr.ok());
  CHECK(pr->masked);
  // The window report: the newest evicted key's lag and the bounds it gives.
  auto rep = rfa::Inspector(*S).window_report(1);
  REQUIRE_MESSAGE(rep.ok(), rep.status().to_string());
  CHECK(rep->size() == (size_t)(m->num_layers() * m->n_heads));
  for (const auto& w : *rep) {
    CAPTURE(w.layer);
    CAPTURE(w.head);
    CHECK(w.edge_lag == doctest::Approx(s.t[(size_t)N + N - 1] - s.t[(size_t)N + N - 1 - W]));
    CHECK(w.decay_bound > 0.0);
    CHECK(w.decay_bound <= 1.0);
    CHECK(w.edge_mass >= 0.0);
    CHECK(w.edge_mass <= 1.0 + 1e-6);
  }
  // edge_mass of layer 1, head 2 from the twin's matrix: A over the oldest eighth of the band.
  const int i = N - 1, k8 = i - W + std::max(1, W / 8);
  double mass = 0;
  for (int j = i - W + 1; j <= k8; ++j) mass += cap.A[((size_t)N + i) * N + j];
  for (const auto& w : *rep)
    if (w.layer == 1 && w.head == 2) CHECK(w.edge_mass == doctest::Approx(mass).epsilon(1e-3).scale(1e-6));
}

TEST_CASE("a stream records its step once and submits once per step") {
  auto m = model(Architecture::lm, 61);
  SessionOptions o;
  o.window = 8;
  auto S = Session::create(test::context(), m, o);
  REQUIRE(S.ok());
  REQUIRE((*S)->step_tokens({1}).ok());
  const SessionStats a = (*S)->stats();
  for (int i = 0; i < 50; ++i) REQUIRE((*S)->step_tokens({(int64_t)(i % 30)}).ok());
  const SessionStats b = (*S)->stats();
  CHECK(b.plans_recorded == a.plans_recorded);  // replayed, never recorded again
  CHECK(b.submits - a.submits == 50);
  CHECK(b.bytes_down - a.bytes_down == 50ull * (uint64_t)m->vocab * 4);  // the logits, nothing else
}

TEST_CASE("window options are checked") {
  auto m = model(Architecture::signal, 71);
  SessionOptions o;
  o.window = -2;
  CHECK(Session::create(test::context(), m, o).status().code() == Code::invalid_argument);
  // A model trained with a window: 0 runs with it, -1 without any, W > 0 with W.
  Model trained = *m;
  trained.attention_window = 5;
  auto tm = std::make_shared<const Model>(trained);
  for (auto [asked, runs] : {std::pair{0, 5}, std::pair{-1, 0}, std::pair{3, 3}}) {
    o.window = asked;
    o.max_context = 64;
    auto W = Session::create(test::context(), tm, o);
    REQUIRE(W.ok());
    CHECK((*W)->window() == runs);
    CHECK((*W)->max_context() == (runs ? runs + runs - 1 : 64));  // the ring's slots, or as asked
  }
  o.max_context = 4096;
  Model nc = *m;
  for (auto& b : nc.blocks) b.attn.params.sw.causal = false;
  o.window = 4;
  auto S = Session::create(test::context(), std::make_shared<const Model>(nc), o);
  CHECK(S.status().code() == Code::input_error);
  CHECK(S.status().message().find("causal") != std::string::npos);
  // Without a window, passing max_context stays an input error.
  o.window = 0;
  o.max_context = 4;
  auto T = Session::create(test::context(), m, o);
  REQUIRE(T.ok());
  CHECK(rfa::Inspector(**T).window_report().status().code() == Code::invalid_argument);
  REQUIRE((*T)->prefill_values(std::vector<float>(4 * 5, 0.5f), 4).ok());
  CHECK((*T)->step_values(std::vector<float>(5, 0.5f)).code() == Code::input_error);
}

TEST_CASE("asynchronous frames: a step and its maps in one submission, results when done") {
  auto m = model(Architecture::signal, 81);
  const int N = 30;
  const Stream s = make_stream(*m, 1, N, 82);
  const std::vector<float> want = run_windowed(m, s, 0 + 1000, {1});  // a wide window: plain causal
  SessionOptions o;
  o.max_context = N;
  auto S = Session::create(test::context(), m, o);
  REQUIRE(S.ok());
  auto map = Heatmap::create(test::context(), 32, 32);
  auto thumb = Heatmap::create(test::context(), 8, 8);
  REQUIRE(map.ok());
  REQUIRE(thumb.ok());
  const int V = (*S)->output_dim();
  std::vector<float> got;
  for (int p = 0; p < N; p += 3) {
    const int n = std::min(3, N - p);
    REQUIRE(rfa::FrameScheduler(**S).begin_frame().ok());
    const SessionStats before = (*S)->stats();
    REQUIRE(feed(**S, s, p, n).ok());
    CHECK((*S)->position() == p + n);  // counted at once
    HeatmapRequest r;
    r.layer = 1;
    r.r1 = r.c1 = N;
    REQUIRE(rfa::Inspector(**S).render_attention(**map, r).ok());
    r.head = 2;
    REQUIRE(rfa::Inspector(**S).render_attention(**thumb, r).ok());
    // Probes and a second step inside the open frame are refused.
    CHECK(rfa::Inspector(**S).attention(0, 0, 0, 0, 1, 0, 1, false).status().code() == Code::invalid_argument);
    CHECK(feed(**S, s, p, 1).code() == Code::invalid_argument);
    REQUIRE(rfa::FrameScheduler(**S).end_frame().ok());
    REQUIRE(rfa::FrameScheduler(**S).wait_frame().ok());
    CHECK(rfa::FrameScheduler(**S).frame_done());
    CHECK((*S)->stats().submits - before.submits == 1);  // the step and both maps: one submission
    REQUIRE((*S)->outputs().size() == (size_t)n * V);
    got.insert(got.end(), (*S)->outputs().begin(), (*S)->outputs().end());
  }
  CHECK_CLOSE_VEC(got, std::vector<double>(want.begin(), want.end()), 1e-5, 1e-5);
  // The caches hold what a synchronous session computed: probes agree.
  auto a = rfa::Inspector(**S).attention(1, 2, 0, N - 3, N, 0, N, false);
  REQUIRE(a.ok());
  std::unique_ptr<Session> sync;
  run_windowed(m, s, 1000, {N}, &sync);
  auto b = rfa::Inspector(*sync).attention(1, 2, 0, N - 3, N, 0, N, false);
  REQUIRE(b.ok());
  CHECK_CLOSE_VEC(*a, std::vector<double>(b->begin(), b->end()), 1e-6, 1e-5);
  CHECK(rfa::FrameScheduler(**S).end_frame().code() == Code::invalid_argument);  // no frame open
}

TEST_CASE("a watched row of an AFA or RT-RFA layer: its weights and its row diagnostics") {
  // The viewer's watched row (Session::watch_row) on the variants: the weights come from their
  // probes and equal the synchronous attention probe; the diagnostics are the variant's own
  // (finite, not NaN) and equal the synchronous row_diagnostics.
  for (AttentionVariant v : {AttentionVariant::afa, AttentionVariant::rt}) {
    CAPTURE((int)v);
    Model m = *model(Architecture::signal, 101);
    std::mt19937 rng(102);
    for (auto& blk : m.blocks)
      blk.attn.params = v == AttentionVariant::afa ? test::make_afa_params(3, 4, rng) : test::make_rt_params(3, 4, rng);
    auto mp = std::make_shared<const Model>(m);
    const int N = 12;
    const Stream s = make_stream(*mp, 1, N, 103);
    SessionOptions o;
    o.max_context = N;
    auto S = Session::create(test::context(), mp, o);
    REQUIRE(S.ok());
    REQUIRE(feed(**S, s, 0, N - 1).ok());
    const double th[4] = {1, 2, 3, 4};
    REQUIRE(rfa::FrameScheduler(**S).begin_frame().ok());
    REQUIRE(feed(**S, s, N - 1, 1).ok());
    REQUIRE(rfa::Inspector(**S).watch_row(1, 2, 0, N - 1, false, th).ok());
    REQUIRE(rfa::FrameScheduler(**S).end_frame().ok());
    REQUIRE(rfa::FrameScheduler(**S).wait_frame().ok());
    const WatchedRow& w = rfa::Inspector(**S).watched_row();
    REQUIRE(w.valid);
    auto a = rfa::Inspector(**S).attention(1, 2, 0, N - 1, N, 0, N, false);
    REQUIRE(a.ok());
    REQUIRE(w.weights.size() == (size_t)N);
    double sum = 0;
    for (int j = 0; j < N; ++j) {
      CHECK(w.weights[(size_t)j] == doctest::Approx((*a)[(size_t)j]).epsilon(1e-6));
      sum += w.weights[(size_t)j];
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    auto d = rfa::Inspector(**S).row_diagnostics(1, 2, 0, N - 1, N, th);
    REQUIRE_MESSAGE(d.ok(), d.status().to_string());
    const RowDiagnostics& r = (*d)[0];
    CHECK(std::isfinite(w.diagnostics.entropy));
    CHECK(w.diagnostics.entropy > 0.0);
    CHECK(w.diagnostics.entropy == doctest::Approx(r.entropy).epsilon(1e-6));
    CHECK(w.diagnostics.log_partition == doctest::Approx(r.log_partition).epsilon(1e-6));
    CHECK(w.diagnostics.max_weight == doctest::Approx(r.max_weight).epsilon(1e-6));
    CHECK(w.diagnostics.expected_lag == doctest::Approx(r.expected_lag).epsilon(1e-6));
    for (int k = 0; k < 4; ++k) CHECK(w.diagnostics.mass_beyond[k] == doctest::Approx(r.mass_beyond[k]).epsilon(1e-6));
    CHECK(w.diagnostics.mass_beyond[0] >= w.diagnostics.mass_beyond[3]);
  }
}

TEST_CASE("head diagnostics of a wrapped sliding-window ring agree with the row probes") {
  auto m = model(Architecture::signal, 91);
  const int N = 300, W = 20;
  const Stream s = make_stream(*m, 1, N, 92);
  std::unique_ptr<Session> S;
  run_windowed(m, s, W, {1, 7}, &S);
  REQUIRE(S->oldest_position() > 0);
  DiagnosticsRequest req;
  req.layer = 1;
  req.head = 1;
  req.r0 = -8;  // the last 8 rows, each with its whole band in the ring
  req.c0 = S->oldest_position();
  auto d = rfa::Inspector(*S).head_diagnostics(req);
  REQUIRE_MESSAGE(d.ok(), d.status().to_string());
  REQUIRE(d->rows.size() == 8);
  const double th[4] = {1, 2, 4, 8};
  for (const QueryDiagnostics& q : d->rows) {
    CAPTURE(q.position);
    CHECK(q.keys == W);  // the band, not the whole stream
    auto r = rfa::Inspector(*S).row_diagnostics(1, 1, 0, q.position, q.position + 1, th);
    REQUIRE(r.ok());
    CHECK(q.entropy == doctest::Approx((*r)[0].entropy).epsilon(1e-4).scale(1e-5));
    CHECK(q.log_partition == doctest::Approx((*r)[0].log_partition).epsilon(1e-4));
    CHECK(q.max_weight == doctest::Approx((*r)[0].max_weight).epsilon(1e-4));
  }
  // Rows before the ring are refused with a message naming the oldest position held.
  req.r0 = 0;
  req.r1 = 10;
  req.c0 = 0;
  auto bad = rfa::Inspector(*S).head_diagnostics(req);
  CHECK(bad.status().code() == Code::invalid_argument);
}
