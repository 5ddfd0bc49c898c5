// Token sampling. The library's host Sampler against a verbatim copy of rfa-run's original sampler
// (the oracle), and the GPU sampler (ops/sample) against the host for fixed seeds over many steps:
// greedy, temperature, top-k, top-p and combined, vocabularies from 1 to 50257, batches of 1 and 3,
// logits with heavy ties, peaked and flat, -inf. Then a recorded command buffer replayed with new
// params between submits, workgroup-size invariance, the argument checks, and timings (MESSAGE).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "ops/sample.hpp"
#include "rfa/sampler.hpp"
#include "sample/order.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

// rfa-run's sampler as it was before the move (tools/rfa-run/sampler.cpp), verbatim.
class OriginalSampler {
 public:
  explicit OriginalSampler(const SamplerOptions& o) : o_(o), rng_(o.seed) {}
  int64_t next(const float* logits, int vocab) {
    if (o_.temperature <= 0.0) return std::max_element(logits, logits + vocab) - logits;
    std::vector<int> idx(vocab);
    std::iota(idx.begin(), idx.end(), 0);
    // Sort candidates by logit, descending; ties broken by id so the order is deterministic.
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    size_t keep = (o_.top_k > 0 && o_.top_k < vocab) ? (size_t)o_.top_k : (size_t)vocab;
    std::vector<double> p(keep);
    const double mx = logits[idx[0]];
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(((double)logits[idx[i]] - mx) / o_.temperature);
    if (o_.top_p < 1.0) {
      double acc = 0;
      size_t cut = keep;
      for (size_t i = 0; i < keep; ++i) {
        acc += p[i] / sum;
        if (acc >= o_.top_p) {
          cut = i + 1;
          break;
        }
      }
      keep = cut;
      p.resize(keep);
      sum = std::accumulate(p.begin(), p.end(), 0.0);
    }
    std::uniform_real_distribution<double> u(0.0, sum);
    double r = u(rng_), acc = 0;
    for (size_t i = 0; i < keep; ++i) {
      acc += p[i];
      if (r < acc) return idx[i];
    }
    return idx[keep - 1];
  }

 private:
  SamplerOptions o_;
  std::mt19937_64 rng_;
};

enum class Dist { normal, quantized, peaked, flat, equal, neg_inf, wide };
const Dist kDists[] = {Dist::normal, Dist::quantized, Dist::peaked, Dist::flat, Dist::equal, Dist::neg_inf, Dist::wide};
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::normal: return "normal";
    case Dist::quantized: return "quantized";
    case Dist::peaked: return "peaked";
    case Dist::flat: return "flat";
    case Dist::equal: return "equal";
    case Dist::neg_inf: return "neg_inf";
    case Dist::wide: return "wide";
  }
  return "?";
}

// One row of logits. `quantized` has heavy ties (steps of 0.5, -0 and +0 both), `peaked` one token
// far above the rest, `flat` every logit within 1e-3, `equal` one value throughout, `neg_inf` a
// third masked out, `wide` a spread of 1e4 so that most probabilities underflow.
void fill_logits(Dist d, float* x, int V, std::mt19937& g) {
  std::normal_distribution<float> n(0.f, 3.f);
  std::uniform_real_distribution<float> un(0.f, 1.f);
  for (int i = 0; i < V; ++i) {
    switch (d) {
      case Dist::normal: x[i] = n(g); break;
      case Dist::quantized: {
        float q = std::round(n(g)) * 0.5f;
        if (q == 0.f && un(g) < 0.5f) q = -0.f;
        x[i] = q;
        break;
      }
      case Dist::peaked: x[i] = n(g) * 0.3f; break;
      case Dist::flat: x[i] = 2.f + un(g) * 1e-3f; break;
      case Dist::equal: x[i] = 0.75f; break;
      case Dist::neg_inf: x[i] = un(g) < 0.33f ? -std::numeric_limits<float>::infinity() : n(g); break;
      case Dist::wide: x[i] = (un(g) - 0.5f) * 1e4f; break;
    }
  }
  if (d == Dist::peaked) x[g() % (uint32_t)V] = 12.f;
  if (d == Dist::neg_inf) x[g() % (uint32_t)V] = 1.f;  // at least one finite logit
}

SamplerOptions opts(double t, int k, double p, uint64_t seed = 0) {
  SamplerOptions o;
  o.temperature = t;
  o.top_k = k;
  o.top_p = p;
  o.seed = seed;
  return o;
}

template <class T>
std::string str(const std::vector<T>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
  return s.str();
}

std::string describe(const SamplerOptions& o) {
  std::ostringstream s;
  s << "T=" << o.temperature << " k=" << o.top_k << " p=" << o.top_p;
  return s.str();
}

// Greedy, temperature only, top-k only, top-p only, combined; huge and tiny temperatures, top_k
// beyond the vocabulary, top_p tiny (one token stays) and 1.
std::vector<SamplerOptions> settings(int V) {
  return {opts(0, 0, 1),      opts(-1, 5, 0.5),   opts(1, 0, 1),     opts(0.7, 0, 1),   opts(1e-3, 0, 1),
          opts(100, 0, 1),    opts(1e6, 0, 1),    opts(1, 1, 1),     opts(1, 2, 1),     opts(1, 5, 1),
          opts(1, 50, 1),     opts(1, V + 10, 1), opts(1, 0, 1e-9),  opts(1, 0, 0.3),   opts(1, 0, 0.5),
          opts(1, 0, 0.9),    opts(1, 0, 0.95),   opts(2, 0, 1.0),   opts(0.8, 40, 0.9), opts(1.5, 3, 0.5),
          opts(1e4, 7, 0.25), opts(0.5, V, 0.99)};
}

const int kVocabs[] = {1, 2, 3, 61, 256, 1000, 4099, 50257};

}  // namespace

TEST_CASE("the order key sorts like the original comparator, on a radix path and a selection path") {
  std::mt19937 g(5);
  for (int V : {1, 2, 3, 61, 256, 1000, 4099})
    for (Dist d : kDists) {
      std::vector<float> x((size_t)V);
      fill_logits(d, x.data(), V, g);
      std::vector<int> ref((size_t)V);
      std::iota(ref.begin(), ref.end(), 0);
      std::sort(ref.begin(), ref.end(), [&](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
      for (int count : {V, V / 2, V / 8, 1, 0}) {
        CAPTURE(V);
        CAPTURE(dist_name(d));
        CAPTURE(count);
        std::vector<int> got = sample::descending_order(x.data(), V, count);
        CHECK(got == std::vector<int>(ref.begin(), ref.begin() + count));
      }
    }
}

TEST_CASE("the library's Sampler gives the original sampler's tokens for every seed and setting") {
  std::mt19937 g(11);
  uint64_t compared = 0;
  for (int V : kVocabs) {
    const int steps = V >= 4099 ? 3 : 12;
    std::vector<float> x((size_t)V);
    for (Dist d : kDists)
      for (SamplerOptions o : settings(V))
        for (uint64_t seed : {0ull, 1ull, 42ull, 0x9E3779B97F4A7C15ull}) {
          o.seed = seed;
          OriginalSampler old(o);
          Sampler now(o);
          for (int s = 0; s < steps; ++s) {
            fill_logits(d, x.data(), V, g);
            const int64_t a = old.next(x.data(), V), b = now.next(x.data(), V);
            if (a != b) {
              CAPTURE(V);
              CAPTURE(dist_name(d));
              CAPTURE(describe(o));
              CAPTURE(seed);
              CAPTURE(s);
              CHECK(a == b);
            }
            ++compared;
          }
        }
  }
  MESSAGE("host Sampler == original on " << compared << " steps");
}

namespace {

// What the host did for one row, for explaining a GPU difference: the distance, relative to the
// kept mass, from r to the nearest boundary of the running sum between the two tokens' places, and
// from top_p to the running p/sum around the host's cut.
double boundary_margin(const float* x, int V, const SamplerOptions& o, double u, int64_t gpu_token) {
  const std::vector<int> idx = sample::descending_order(x, V, V);
  const size_t keep_k = (o.top_k > 0 && o.top_k < V) ? (size_t)o.top_k : (size_t)V;
  std::vector<double> p(keep_k);
  double sum = 0;
  for (size_t i = 0; i < keep_k; ++i) sum += p[i] = std::exp(((double)x[idx[i]] - (double)x[idx[0]]) / o.temperature);
  double margin = INFINITY;
  size_t keep = keep_k;
  if (o.top_p < 1.0) {
    double acc = 0;
    std::vector<double> accs;
    size_t cut = keep_k;
    for (size_t i = 0; i < keep_k; ++i) {
      acc += p[i] / sum;
      accs.push_back(acc);
      if (acc >= o.top_p) {
        cut = i + 1;
        break;
      }
    }
    margin = std::fabs(accs[cut - 1] - o.top_p);
    if (cut >= 2) margin = std::min(margin, std::fabs(accs[cut - 2] - o.top_p));
    keep = cut;
  }
  const double kept = std::accumulate(p.begin(), p.begin() + (long)keep, 0.0);
  const double r = u * kept;
  size_t host = keep - 1, gpu = keep_k;
  double acc = 0;
  std::vector<double> cum(keep);
  for (size_t i = 0; i < keep; ++i) cum[i] = acc += p[i];
  for (size_t i = 0; i < keep; ++i)
    if (r < cum[i]) {
      host = i;
      break;
    }
  for (size_t i = 0; i < keep_k; ++i)
    if (idx[i] == gpu_token) gpu = i;
  if (gpu >= keep) return margin;  // outside the host's nucleus: only the cut can explain it
  for (size_t j = std::min(host, gpu); j < std::max(host, gpu); ++j) margin = std::min(margin, std::fabs(r - cum[j]) / kept);
  return margin;
}

struct Compared {
  uint64_t steps = 0, rows = 0, mismatches = 0;
  double worst_margin = 0;
  std::map<std::string, uint64_t> classes;  // differing rows by distribution and setting
};

// The GPU sampler against Sampler::pick for one vocabulary size, batch and precision: for every
// distribution and setting, `steps` steps with fresh logits and fresh draws from a Sampler seeded
// per setting. The dispatch is recorded once per shape and replayed, as a session does.
Compared gpu_vs_host(gpu::Context& g, int V, uint32_t rows, ops::SamplePrecision prec, int steps, double tolerance) {
  Compared c;
  auto alloc = [&](uint64_t bytes, gpu::MemoryKind kind) {
    auto b = g.allocator().allocate(bytes, kind, "sample test");
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    return b.take();
  };
  // Rows padded apart (stride V + 3) and offset, to exercise the shape's offsets.
  ops::SampleShape shape;
  shape.rows = rows;
  shape.vocab = (uint32_t)V;
  shape.logits_offset = 5;
  shape.row_stride = (uint64_t)V + 3;
  shape.tokens_offset = 2;
  gpu::Buffer logits = alloc((shape.logits_offset + rows * shape.row_stride) * 4, gpu::MemoryKind::upload);
  gpu::Buffer params = alloc(ops::sample_params_bytes(rows), gpu::MemoryKind::upload);
  gpu::Buffer tokens = alloc((shape.tokens_offset + rows) * 4, gpu::MemoryKind::readback);
  REQUIRE(logits.mapped);
  REQUIRE(params.mapped);
  REQUIRE(tokens.mapped);
  std::memset(logits.mapped, 0xFF, logits.size);  // NaN padding: never read
  ops::SampleKernel kernel;
  kernel.precision = prec;
  gpu::Recorder rec(g, gpu::GpuTiming::none);
  REQUIRE(rec.begin(true).ok());
  Status s = ops::record_sample(g, rec, logits, params, tokens, shape, kernel);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(rec.end().ok());

  std::mt19937 lg(1000u + (uint32_t)V * 7u + rows);
  float* x = reinterpret_cast<float*>(logits.mapped);
  const uint32_t* tok = reinterpret_cast<const uint32_t*>(tokens.mapped);
  std::vector<double> u(rows);
  uint64_t seed = 1;
  for (Dist d : kDists)
    for (SamplerOptions o : settings(V)) {
      o.seed = seed++;
      Sampler host(o);
      for (int step = 0; step < steps; ++step) {
        for (uint32_t r = 0; r < rows; ++r) {
          fill_logits(d, x + shape.logits_offset + r * shape.row_stride, V, lg);
          u[r] = o.temperature > 0 ? host.draw() : 0.0;
        }
        REQUIRE(ops::write_sample_params(g, params, o, u.data(), rows).ok());
        REQUIRE(rec.submit().ok());
        REQUIRE(rec.wait().ok());
        ++c.steps;
        for (uint32_t r = 0; r < rows; ++r) {
          const float* row = x + shape.logits_offset + r * shape.row_stride;
          const int64_t want = Sampler::pick(row, V, o, u[r]), got = tok[shape.tokens_offset + r];
          ++c.rows;
          if (want == got) continue;
          ++c.mismatches;
          const double m = o.temperature > 0 ? boundary_margin(row, V, o, u[r], got) : INFINITY;
          c.worst_margin = std::max(c.worst_margin, m);
          ++c.classes[std::string(dist_name(d)) + " " + describe(o)];
          CAPTURE(V);
          CAPTURE(rows);
          CAPTURE(r);
          CAPTURE(dist_name(d));
          CAPTURE(describe(o));
          CAPTURE(step);
          CAPTURE(u[r]);
          CAPTURE(want);
          CAPTURE(got);
          CAPTURE(m);
          // A difference must be a rounding case: r (or top_p) within `tolerance` of a boundary.
          CHECK(m <= tolerance);
        }
      }
    }
  return c;
}

void run_gpu_vs_host(ops::SamplePrecision prec, double tolerance, bool expect_equal) {
  auto& g = test::gpu();
  Compared total;
  for (int V : kVocabs)
    for (uint32_t rows : {1u, 3u}) {
      const int steps = V >= 50257 ? 2 : V >= 4099 ? 4 : 6;
      Compared c = gpu_vs_host(g, V, rows, prec, steps, tolerance);
      if (c.mismatches)
        MESSAGE("V=" << V << " rows=" << rows << ": " << c.mismatches << " of " << c.rows
                     << " rows differ, largest boundary margin " << c.worst_margin);
      total.steps += c.steps;
      total.rows += c.rows;
      total.mismatches += c.mismatches;
      total.worst_margin = std::max(total.worst_margin, c.worst_margin);
      for (auto& [k, n] : c.classes) total.classes[k] += n;
    }
  for (auto& [k, n] : total.classes) MESSAGE("  " << n << " rows differ with logits " << k);
  MESSAGE((prec == ops::SamplePrecision::f64 ? "fp64" : "fp32") << " GPU vs host: " << total.steps << " steps, "
          << total.rows << " rows compared, " << total.mismatches << " differ (largest boundary margin "
          << total.worst_margin << ")");
  if (expect_equal) CHECK(total.mismatches == 0);
}

}  // namespace

TEST_CASE("GPU sampling equals the host for fixed seeds (fp64 probabilities)") {
  if (!test::gpu().caps().shader_float64) {
    MESSAGE("no shaderFloat64 on this device: the fp64 kernel is not tested");
    return;
  }
  // The probabilities agree to about 1e-15 of the kept mass: no token may differ.
  run_gpu_vs_host(ops::SamplePrecision::f64, 1e-12, true);
}

TEST_CASE("GPU sampling with fp32 probabilities differs from the host only at rounding boundaries") {
  // fp32 p = exp((x - max) / T) carries a relative error of a few 1e-7 per unit of |x - max| / T
  // (up to the 44 where p leaves 0.64 fixed point); every difference must lie that close to a
  // boundary of the running mass.
  run_gpu_vs_host(ops::SamplePrecision::f32, 2e-5, false);
}

TEST_CASE("a recorded sampling dispatch follows new params and logits between submits") {
  auto& g = test::gpu();
  const int V = 1000;
  const uint32_t rows = 3;
  auto alloc = [&](uint64_t bytes, gpu::MemoryKind kind) {
    auto b = g.allocator().allocate(bytes, kind, "sample replay test");
    REQUIRE(b.ok());
    return b.take();
  };
  gpu::Buffer logits = alloc((uint64_t)rows * V * 4, gpu::MemoryKind::upload);
  gpu::Buffer params = alloc(ops::sample_params_bytes(rows), gpu::MemoryKind::upload);
  gpu::Buffer tokens = alloc(rows * 4, gpu::MemoryKind::readback);
  float* x = reinterpret_cast<float*>(logits.mapped);
  const uint32_t* tok = reinterpret_cast<const uint32_t*>(tokens.mapped);
  std::mt19937 lg(3);
  for (uint32_t r = 0; r < rows; ++r) fill_logits(Dist::normal, x + r * V, V, lg);

  gpu::Recorder rec(g);
  REQUIRE(rec.begin(true).ok());
  ops::SampleShape shape;
  shape.rows = rows;
  shape.vocab = V;
  REQUIRE(ops::record_sample(g, rec, logits, params, tokens, shape).ok());
  REQUIRE(rec.end().ok());

  auto run = [&](const SamplerOptions& o, const std::vector<double>& u) {
    REQUIRE(ops::write_sample_params(g, params, o, u.data(), rows).ok());
    REQUIRE(rec.submit().ok());
    REQUIRE(rec.wait().ok());
    std::vector<int64_t> got(tok, tok + rows), want;
    for (uint32_t r = 0; r < rows; ++r) want.push_back(Sampler::pick(x + r * V, V, o, u[r]));
    CAPTURE(describe(o));
    CAPTURE(str(got));
    CAPTURE(str(want));
    CHECK(got == want);
    return got;
  };
  std::vector<int64_t> argmax;
  for (uint32_t r = 0; r < rows; ++r) argmax.push_back(std::max_element(x + r * V, x + (r + 1) * V) - (x + r * V));

  // Greedy; then settings that must also give the argmax whatever u is; then real sampling, where
  // u near 1 reaches deep into the distribution.
  CHECK(run(opts(0, 0, 1), {0, 0, 0}) == argmax);
  CHECK(run(opts(1, 1, 1), {0.99, 0.5, 0.01}) == argmax);
  CHECK(run(opts(1, 0, 1e-9), {0.99, 0.5, 0.01}) == argmax);
  CHECK(run(opts(1e-6, 0, 1), {0.999, 0.7, 0.3}) == argmax);
  const auto hot = run(opts(5, 0, 1), {0.999, 0.9, 0.6});
  CHECK(hot != argmax);
  run(opts(1, 40, 0.9), {0.25, 0.5, 0.75});
  run(opts(1, 40, 0.9), {0.75, 0.5, 0.25});
  // New logits, same recording.
  for (uint32_t r = 0; r < rows; ++r) fill_logits(Dist::quantized, x + r * V, V, lg);
  run(opts(0.8, 0, 0.95), {0.1, 0.2, 0.3});
  run(opts(0, 0, 1), {0, 0, 0});
  // A session's loop: one Sampler, one draw per row per step.
  Sampler host(opts(1.2, 100, 0.97, 77));
  for (int step = 0; step < 20; ++step) {
    for (uint32_t r = 0; r < rows; ++r) fill_logits(Dist::peaked, x + r * V, V, lg);
    std::vector<double> u(rows);
    for (auto& v : u) v = host.draw();
    run(host.options(), u);
  }
}

TEST_CASE("the GPU sampler's tokens do not depend on the workgroup size") {
  auto& g = test::gpu();
  const uint32_t rows = 5;
  const int V = 4099;
  std::vector<float> x((size_t)rows * V);
  std::mt19937 lg(9);
  const Dist dists[rows] = {Dist::quantized, Dist::flat, Dist::quantized, Dist::neg_inf, Dist::equal};
  for (uint32_t r = 0; r < rows; ++r) fill_logits(dists[r], x.data() + r * V, V, lg);
  gpu::Buffer logits = test::upload(x);
  auto tb = g.allocator().allocate(rows * 4, gpu::MemoryKind::readback, "tokens");
  auto pb = g.allocator().allocate(ops::sample_params_bytes(rows), gpu::MemoryKind::upload, "params");
  REQUIRE(tb.ok());
  REQUIRE(pb.ok());
  gpu::Buffer tokens = tb.take(), params = pb.take();
  const uint32_t limit = std::min(g.caps().max_workgroup_invocations, g.caps().max_workgroup_size[0]);
  for (auto prec : {ops::SamplePrecision::f32, ops::SamplePrecision::automatic})
    for (const SamplerOptions& o : {opts(1, 0, 1), opts(3, 0, 0.9), opts(1, 500, 1), opts(2, 1000, 0.5)}) {
      std::vector<double> u = {0.123, 0.999, 0.5, 0.77, 0.31};
      REQUIRE(ops::write_sample_params(g, params, o, u.data(), rows).ok());
      std::vector<uint32_t> first;
      for (uint32_t wg : {16u, 32u, 100u, 256u, 1024u}) {
        if (wg > limit) continue;
        CAPTURE(wg);
        CAPTURE(describe(o));
        ops::SampleKernel k;
        k.precision = prec;
        k.workgroup = wg;
        gpu::Recorder rec(g);
        REQUIRE(rec.begin().ok());
        ops::SampleShape shape;
        shape.rows = rows;
        shape.vocab = V;
        REQUIRE(ops::record_sample(g, rec, logits, params, tokens, shape, k).ok());
        REQUIRE(rec.submit_and_wait().ok());
        std::vector<uint32_t> got(rows);
        std::memcpy(got.data(), tokens.mapped, rows * 4);
        if (first.empty()) first = got;
        CAPTURE(str(got));
        CAPTURE(str(first));
        CHECK(got == first);
      }
    }
}

TEST_CASE("sampling arguments are checked") {
  auto& g = test::gpu();
  std::vector<uint32_t> words(ops::sample_params_bytes(2) / 4);
  double u[2] = {0.5, 0.5};
  CHECK(ops::encode_sample_params(opts(1, 0, 1), u, 2, words.data()).ok());
  CHECK(ops::encode_sample_params(opts(NAN, 0, 1), u, 2, words.data()).code() == Code::invalid_argument);
  CHECK(ops::encode_sample_params(opts(INFINITY, 0, 1), u, 2, words.data()).code() == Code::invalid_argument);
  CHECK(ops::encode_sample_params(opts(1, 0, NAN), u, 2, words.data()).code() == Code::invalid_argument);
  double bad[2] = {0.5, 1.0};
  CHECK(ops::encode_sample_params(opts(1, 0, 1), bad, 2, words.data()).code() == Code::invalid_argument);
  CHECK(ops::encode_sample_params(opts(0, 0, 1), nullptr, 2, words.data()).ok());
  // The layout the shader reads.
  REQUIRE(ops::encode_sample_params(opts(0.5, 7, 0.5), u, 2, words.data()).ok());
  CHECK(words[0] == 2u);
  CHECK(words[1] == 7u);
  CHECK(words[5] == 0x3FE00000u);   // 0.5 as a double
  CHECK(words[7] == 0x3FE00000u);
  CHECK(words[8] == 0u);            // 0.5 as 0.64 fixed point
  CHECK(words[9] == 0x80000000u);
  CHECK(words[13] == 0x80000000u);  // row 0's u
  CHECK(words[15] == 0x3FE00000u);

  gpu::Buffer logits = test::zeros(10);
  const uint32_t floats = (uint32_t)(logits.size / 4);  // the allocator rounds sizes up
  auto pb = g.allocator().allocate(ops::sample_params_bytes(2), gpu::MemoryKind::upload, "params");
  REQUIRE(pb.ok());
  gpu::Buffer params = pb.take();
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  ops::SampleShape shape;
  shape.rows = 2;
  shape.vocab = floats / 2 + 1;  // two rows do not fit
  CHECK(ops::record_sample(g, rec, logits, params, logits, shape).code() == Code::invalid_argument);
  shape.vocab = floats / 2;
  shape.tokens_offset = floats - 1;  // the second id does not fit
  CHECK(ops::record_sample(g, rec, logits, params, logits, shape).code() == Code::invalid_argument);
  shape.tokens_offset = 0;
  {
    gpu::Buffer big = test::zeros(4096);
    ops::SampleShape many;
    many.rows = (uint32_t)(params.size / 8) + 1;  // more rows than the params buffer has draws for
    many.vocab = 1;
    CHECK(ops::record_sample(g, rec, big, params, big, many).code() == Code::invalid_argument);
  }
  shape.vocab = 0;
  CHECK(ops::record_sample(g, rec, logits, params, logits, shape).code() == Code::invalid_argument);
  shape.vocab = 5;
  shape.row_stride = 4;  // rows overlap
  CHECK(ops::record_sample(g, rec, logits, params, logits, shape).code() == Code::invalid_argument);
  shape.row_stride = 0;
  ops::SampleKernel k;
  k.workgroup = 8;
  CHECK(ops::record_sample(g, rec, logits, params, logits, shape, k).code() == Code::unsupported);
  gpu::Capabilities no_f64 = g.caps();
  no_f64.shader_float64 = false;
  ops::SampleKernel f64;
  f64.precision = ops::SamplePrecision::f64;
  CHECK(ops::choose_sample_kernel(no_f64, f64).status().code() == Code::unsupported);
  CHECK(!ops::choose_sample_kernel(no_f64, {})->f64);
  REQUIRE(rec.submit_and_wait().ok());
}

TEST_CASE("sampling timings (reported, not asserted)") {
  auto& g = test::gpu();
  for (int V : {256, 50257})
    for (uint32_t rows : {1u, 8u}) {
      std::vector<float> x((size_t)rows * V);
      std::mt19937 lg(21);
      for (uint32_t r = 0; r < rows; ++r) fill_logits(Dist::normal, x.data() + (size_t)r * V, V, lg);
      gpu::Buffer logits = test::upload(x);
      auto tb = g.allocator().allocate(rows * 4, gpu::MemoryKind::readback, "tokens");
      auto pb = g.allocator().allocate(ops::sample_params_bytes(rows), gpu::MemoryKind::upload, "params");
      REQUIRE(tb.ok());
      REQUIRE(pb.ok());
      gpu::Buffer tokens = tb.take(), params = pb.take();
      std::vector<double> u(rows, 0.6180339887);
      for (auto prec : {ops::SamplePrecision::f32, ops::SamplePrecision::automatic})
        for (const SamplerOptions& o : {opts(0, 0, 1), opts(1, 0, 1), opts(0.8, 50, 1), opts(1, 0, 0.9)}) {
          if (prec == ops::SamplePrecision::f32 && o.temperature <= 0) continue;  // greedy: one kernel path
          ops::SampleKernel k;
          k.precision = prec;
          gpu::Recorder rec(g, gpu::GpuTiming::per_dispatch);
          REQUIRE(rec.begin(true).ok());
          ops::SampleShape shape;
          shape.rows = rows;
          shape.vocab = (uint32_t)V;
          REQUIRE(ops::record_sample(g, rec, logits, params, tokens, shape, k).ok());
          REQUIRE(rec.end().ok());
          REQUIRE(ops::write_sample_params(g, params, o, u.data(), rows).ok());
          const int reps = 5;
          double best_gpu = INFINITY, best_wall = INFINITY;
          for (int i = 0; i < reps; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            REQUIRE(rec.submit().ok());
            REQUIRE(rec.wait().ok());
            best_wall = std::min(best_wall, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            if (!rec.timings().empty()) best_gpu = std::min(best_gpu, rec.timings()[0].ms);
          }
          // The host twin on the same rows, for scale.
          auto t0 = std::chrono::steady_clock::now();
          for (uint32_t r = 0; r < rows; ++r) Sampler::pick(x.data() + (size_t)r * V, V, o, u[r]);
          const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          const bool f64 = ops::choose_sample_kernel(g.caps(), k)->f64;
          const std::string kind = o.temperature <= 0 ? "greedy" : f64 ? "fp64" : "fp32";
          MESSAGE("V=" << V << " rows=" << rows << " " << describe(o) << " " << kind << ": GPU " << best_gpu
                       << " ms (submit+wait " << best_wall << " ms), host pick " << host_ms << " ms");
        }
    }
}
