// Threads (issue 33; docs/cpp-api.md, "Threads"): what may be shared is shared here, from several
// threads at once, and every result equals the same work done on one thread. Run by the
// ThreadSanitizer build too (scripts/test.sh), which must report nothing.
//  - two sessions on one context, each fed from its own thread;
//  - one session fed on one thread while another thread inspects it (probes, diagnostics, the
//    window report), as an app's UI thread does beside its inference thread;
//  - one context shared by sessions of several models (RFA, AFA, RT-RFA, a language model
//    generating), one thread each.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "rfa/inspect.hpp"
#include "rfa/session.hpp"
#include "test_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

std::shared_ptr<const Model> zoo(const char* name) {
  auto m = load_model_dir(source_dir() + "/models/" + name);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  return m.take();
}

// `steps` positions of a signal model, one per call, from a seed of its own; every output.
Status stream(Session& s, int steps, int seed, std::vector<float>* out) {
  const int d = model_info(s.model()).input_dim;
  for (int p = 0; p < steps; ++p) {
    std::vector<float> x((size_t)d);
    for (int k = 0; k < d; ++k) x[(size_t)k] = (float)std::sin(0.17 * (p + 1) * (k + 1) + seed);
    RFA_TRY(s.step_values(x, {0.5 * p}));
    out->insert(out->end(), s.outputs().begin(), s.outputs().end());
  }
  return Status::Ok();
}

std::unique_ptr<Session> session_of(std::shared_ptr<const Model> m, int window = 0) {
  SessionOptions o;
  o.window = window;
  o.max_context = 256;
  auto s = Session::create(context(), std::move(m), o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return s.take();
}

// Runs every job on a thread of its own, all at once; the statuses they returned.
std::vector<Status> together(const std::vector<std::function<Status()>>& jobs) {
  std::vector<Status> st(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i) threads.emplace_back([&, i] { st[i] = jobs[i](); });
  for (auto& t : threads) t.join();
  return st;
}

}  // namespace

TEST_CASE("two sessions on one context, fed from two threads, give what one thread gives") {
  auto model = zoo("spiral-filter");
  std::vector<float> want[2], got[2];
  for (int i = 0; i < 2; ++i) REQUIRE(stream(*session_of(model), 70, i, &want[i]).ok());
  auto a = session_of(model), b = session_of(model);
  const auto st = together({[&] { return stream(*a, 70, 0, &got[0]); }, [&] { return stream(*b, 70, 1, &got[1]); }});
  for (const Status& s : st) CHECK_MESSAGE(s.ok(), s.to_string());
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
}

TEST_CASE("one session fed on one thread and inspected on another") {
  auto model = zoo("spiral-filter");
  std::vector<float> want, got;
  REQUIRE(stream(*session_of(model), 90, 3, &want).ok());
  auto s = session_of(model);
  std::atomic<bool> done{false};
  int probes = 0;
  const auto st = together({[&] {
                              Status r = stream(*s, 90, 3, &got);
                              done = true;
                              return r;
                            },
                            [&]() -> Status {
                              Inspector inspect(*s);
                              const double th[4] = {1, 4, 16, 64};
                              while (!done) {
                                if (s->position() < 2) continue;
                                // Each call sees one consistent state of the stream (the session
                                // serializes its calls): a square map of what was cached then.
                                auto a = inspect.attention(0, 1, 0, Inspector::kCached, Inspector::kCached,
                                                           Inspector::kCached, Inspector::kCached, false);
                                if (!a) return a.status();
                                const size_t n = (size_t)std::llround(std::sqrt((double)a->size()));
                                if (n * n != a->size() || n < 2) return Status(Code::device_error, "not a square map");
                                auto rows = inspect.row_diagnostics(1, 2, 0, Inspector::kCached, Inspector::kCached, th);
                                if (!rows) return rows.status();
                                auto rep = inspect.window_report(0, true);
                                if (!rep) return rep.status();
                                auto c = inspect.curves(0, 0, {0.0, 1.0, 3.0});
                                if (!c) return c.status();
                                ++probes;
                              }
                              return Status::Ok();
                            }});
  for (const Status& r : st) CHECK_MESSAGE(r.ok(), r.to_string());
  CHECK(probes > 0);
  CHECK(got == want);  // probes never disturb the stream
}

TEST_CASE("one context shared by sessions of several models, one thread each") {
  const char* signals[] = {"spiral-filter", "spiral-afa", "spiral-rt"};
  std::vector<std::shared_ptr<const Model>> models;
  for (const char* m : signals) models.push_back(zoo(m));
  auto lm = zoo("tiny-char-lm");
  auto generate = [&](Session& s, Generation* g) -> Status {
    const std::string prompt = "The filter ";
    RFA_TRY(s.prefill_tokens(std::vector<int64_t>(prompt.begin(), prompt.end()), (int)prompt.size()));
    GenerateOptions o;
    o.tokens = 12;
    o.sampler.temperature = 0.7;
    o.sampler.seed = 11;
    auto r = s.generate(o);
    if (!r) return r.status();
    *g = r.take();
    return Status::Ok();
  };
  std::vector<std::vector<float>> want(3), got(3);
  Generation gwant, ggot;
  for (int i = 0; i < 3; ++i) REQUIRE(stream(*session_of(models[(size_t)i]), 40, i, &want[(size_t)i]).ok());
  REQUIRE(generate(*session_of(lm), &gwant).ok());
  std::vector<std::unique_ptr<Session>> s;
  for (int i = 0; i < 3; ++i) s.push_back(session_of(models[(size_t)i]));
  auto g = session_of(lm);
  const auto st = together({[&] { return stream(*s[0], 40, 0, &got[0]); }, [&] { return stream(*s[1], 40, 1, &got[1]); },
                            [&] { return stream(*s[2], 40, 2, &got[2]); }, [&] { return generate(*g, &ggot); }});
  for (const Status& r : st) CHECK_MESSAGE(r.ok(), r.to_string());
  for (int i = 0; i < 3; ++i) CHECK(got[(size_t)i] == want[(size_t)i]);
  CHECK(ggot.tokens == gwant.tokens);
}
