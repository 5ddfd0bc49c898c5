// Shared by the attention suites (test_rfa_attention, test_attention_paths): the paper's named
// models as physical parameters, random inputs, a fixture that runs the GPU op through a cache in
// chunks (on a chosen kernel path), the double-precision twin and the fp32 comparison.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/sdpa.hpp"
#include "reference/attention_ref.hpp"
#include "reference/ops_ref.hpp"
#include "test_support.hpp"
#include "core/access.hpp"

namespace rfa::test {

// A kernel path of the attention op: the context's forced variants, the K/V cache precision, and
// whether the cache's integer-lag table is built (else every pair computes its terms).
struct AttentionPath {
  KernelOptions kernels;
  bool kv_f16 = false;
  bool lag_table = true;
  bool use_default_context = true;  // the process context (RFA_* variables), not `kernels`
  std::string device_profile;       // with `kernels`: a context under this device profile ("" none)
  gpu::Context& gpu() const {
    return use_default_context ? test::gpu() : gpu_of(test::context(kernels, device_profile));
  }
};


inline double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

// The paper's models as physical parameters (docs/reference-code.md §3.5, §9) on H heads of D dims, with
// per-head noise jittered so heads differ. Names: M1, M2, M2.1 ... M2.7, RoPE, ALiBi, DecayedRoPE,
// SCRoPE.
inline AttentionParams model(const std::string& name, int H, int D, uint32_t seed = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  AttentionParams p;
  p.heads = H;
  p.dim = D;
  const bool m1 = name == "M1";
  const int half = D / 2;
  for (int h = 0; h < H; ++h) {
    // SC bank: heads hold slices of one master bank (slow -> fast); M1: every head the RoPE bank.
    double wmax = 0;
    for (int k = 0; k < half; ++k) {
      const double w = (m1 || name == "RoPE")
                           ? std::pow(10000.0, -(double)k / half)
                           : std::pow(10000.0, -(double)(H * half - 1 - half * h - k) / (H * half));
      wmax = std::max(wmax, w);
      p.omega.push_back(w);
      p.omega.push_back(-w);
    }
    if (D % 2 == 1) p.omega.push_back(0.0);  // an odd head dim: one dim without rotation
    HeadParams hp;
    const double mu0 = (h < std::max(1, H / 4)) ? 0.0 : 0.05 * wmax;
    hp.mu = m1 ? mu0 * 5.0 / 511.0 : mu0;
    hp.sigma2 = std::max(2.0 * 0.1 * mu0, 1e-6) * (1.0 + u(rng));
    hp.s2t = softplus(0.1);
    hp.eta2 = softplus(1.0) + 1e-5 + 0.2 * u(rng);
    hp.gamma2 = softplus(1.0) + 1e-5 + 0.2 * u(rng);
    hp.nu = D * softplus(4.0 + u(rng)) + 2 + 1e-5;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = softplus(1.0) + 1e-5 + 0.3 * u(rng);
    hp.lag_shift = softplus(0.0) + 0.2 * u(rng);
    hp.gate_prior_log = 0.1 * u(rng);
    hp.gate_scale_log = -2.0 + 0.5 * u(rng);
    const double nu_g = D * (softplus(4.0) + 2 + 1e-5);
    hp.gate_c = std::log(nu_g - 2.0 + 1e-5) - std::log(nu_g + 1e-5);
    p.head.push_back(hp);
  }
  AttentionSwitches& sw = p.sw;
  auto flat = [&] {
    sw.additive_bias = AdditiveBias::none;
    sw.precision = RobustPrecision::inv_sqrt_d;
  };
  auto pure_rotation = [&](bool keep_mu) {
    for (auto& hp : p.head) {
      if (!keep_mu) hp.mu = 0;
      hp.sigma2 = 0;
      hp.eta2 = 0;
    }
    sw.robust = false;
    sw.full_residual = false;
    flat();
  };
  if (name == "M1" || name == "M2") {
  } else if (name == "M2.1") {
    sw.robust = false;
  } else if (name == "M2.2") {
    for (auto& hp : p.head) hp.sigma2 = hp.eta2 = 0;
    flat();
  } else if (name == "M2.3") {
    sw.precision = RobustPrecision::inv_sqrt_d;
  } else if (name == "M2.4") {
    sw.counter_rotate = false;
  } else if (name == "M2.5") {
    for (auto& w : p.omega) w = 0;
  } else if (name == "M2.6" || name == "SCRoPE") {
    pure_rotation(false);
  } else if (name == "M2.7") {
    sw.gate = true;
  } else if (name == "RoPE") {
    pure_rotation(false);
    for (auto& hp : p.head) hp.lag_shift = 0;
  } else if (name == "DecayedRoPE") {
    pure_rotation(true);
  } else if (name == "ALiBi") {
    pure_rotation(false);
    for (auto& w : p.omega) w = 0;
    for (auto& hp : p.head) hp.sigma2 = 0.05 * (1 + u(rng)), hp.eta2 = 1.0;
    sw.additive_bias = AdditiveBias::linear_lag;
  } else {
    FAIL("unknown model " << name);
  }
  return p;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

struct Inputs {
  int B = 1, N = 1;
  std::vector<float> q, k, v;  // [B*N, 2*H*D] half-split
  std::vector<double> t;       // [B*N], empty: 0..N-1
  std::vector<int32_t> ids;    // [B*N] token ids, for learned accumulated steps (else empty)
};

// times: 0 positions 0..N-1; 1 irregular (non-integer, repeats); 2 irregular near 1e6; 3 integers
// in irregular steps of -1..4 (repeats, steps back, lags spread wider than a tile; never negative).
inline Inputs make_inputs(const AttentionParams& p, int B, int N, uint32_t seed, int times) {
  Inputs in;
  in.B = B;
  in.N = N;
  const size_t n = (size_t)B * N * 2 * p.heads * p.dim;
  in.q = test::random_floats(n, seed, -1.f, 1.f);
  in.k = test::random_floats(n, seed + 1, -1.f, 1.f);
  in.v = test::random_floats(n, seed + 2, -1.f, 1.f);
  if (times == 3) {
    std::mt19937 rng(seed + 3);
    std::uniform_int_distribution<int> step(-1, 4);
    for (int b = 0; b < B; ++b) {
      int t = 5 * b;
      for (int i = 0; i < N; ++i) {
        in.t.push_back(t);
        t = std::max(0, t + step(rng));
      }
    }
  } else if (times > 0) {
    std::mt19937 rng(seed + 3);
    std::uniform_real_distribution<double> gap(0.0, 2.5);
    for (int b = 0; b < B; ++b) {
      double t = times == 2 ? 1.0e6 + 0.37 * b : 0.25 * b;
      for (int i = 0; i < N; ++i) {
        in.t.push_back(t);
        t += (i % 7 == 3) ? 0.0 : gap(rng);  // repeated timestamps too
      }
    }
  }
  return in;
}

struct GpuRun {
  std::vector<float> out, row_max, row_sum, row_energy;
};

struct Fixture {
  const AttentionParams& p;
  const Inputs& in;
  uint32_t cap;
  AttentionPath path;
  gpu::Context& g;
  ops::AttentionWeightsGpu w;
  ops::AttentionCache cache;
  gpu::Buffer ts;
  Fixture(const AttentionParams& p_, const Inputs& in_, uint32_t extra = 0, const AttentionPath& path_ = {})
      : p(p_), in(in_), cap((uint32_t)in_.N + extra), path(path_), g(path_.gpu()) {
    auto wr = ops::AttentionWeightsGpu::create(g, p);
    REQUIRE_MESSAGE(wr.ok(), wr.status().to_string());
    w = wr.take();
    auto cr = ops::AttentionCache::create(g, (uint32_t)in.B, (uint32_t)p.heads, (uint32_t)p.dim, cap, "test cache", 0,
                                          path.kv_f16, p.phase != PhaseSource::omega_t);
    REQUIRE_MESSAGE(cr.ok(), cr.status().to_string());
    cache = cr.take();
    std::vector<float> tf((size_t)in.B * cap * 2, 0.f);
    for (int b = 0; b < in.B; ++b)
      for (int i = 0; i < in.N; ++i) {
        const double t = in.t.empty() ? (double)i : in.t[(size_t)b * in.N + i];
        ops::split_timestamp(t, &tf[((size_t)b * cap + i) * 2], &tf[((size_t)b * cap + i) * 2 + 1]);
      }
    ts = up(tf);
    if (path.lag_table) {
      gpu::Recorder rec(g);
      REQUIRE(rec.begin().ok());
      Status st = ops::record_rfa_lag_table(g, rec, w, cache);
      REQUIRE_MESSAGE(st.ok(), st.to_string());
      st = rec.submit_and_wait();
      REQUIRE_MESSAGE(st.ok(), st.to_string());
    }
  }
  static gpu::Buffer up_on(gpu::Context& ctx, const std::vector<float>& x) {
    auto b = ctx.upload_new(x, "test");
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    return b.take();
  }
  gpu::Buffer up(const std::vector<float>& x) { return up_on(g, x); }
  std::vector<float> down(const gpu::Buffer& b, size_t floats) {
    std::vector<float> out(floats);
    Status st = g.download(b, out.data(), floats * 4);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    return out;
  }
  std::vector<float> rows(const std::vector<float>& x, int i0, int n) const {  // rows [i0, i0+n) of every batch row
    const size_t W = 2 * (size_t)p.heads * p.dim;
    std::vector<float> r;
    for (int b = 0; b < in.B; ++b)
      r.insert(r.end(), x.begin() + ((size_t)b * in.N + i0) * W, x.begin() + ((size_t)b * in.N + i0 + n) * W);
    return r;
  }
  // Runs positions [0, N) in chunks of `chunk` new positions per call; returns out [B*N, 2HD].
  GpuRun run(int chunk) {
    const size_t W = 2 * (size_t)p.heads * p.dim;
    std::vector<float> out((size_t)in.B * in.N * W);
    for (int i0 = 0; i0 < in.N; i0 += chunk) {
      const int n = std::min(chunk, in.N - i0);
      gpu::Buffer q = up(rows(in.q, i0, n)), k = up(rows(in.k, i0, n)), v = up(rows(in.v, i0, n));
      gpu::Buffer vn = up(std::vector<float>((size_t)in.B * n * W)), o = up(std::vector<float>((size_t)in.B * n * W));
      gpu::Buffer ids;  // this call's token ids [B, n] (learned accumulated steps)
      if (!in.ids.empty()) {
        std::vector<float> part;  // uint32 ids carried bit for bit in a float buffer
        for (int b = 0; b < in.B; ++b)
          for (int i = i0; i < i0 + n; ++i) {
            const uint32_t id = (uint32_t)in.ids[(size_t)b * in.N + i];
            float f;
            std::memcpy(&f, &id, 4);
            part.push_back(f);
          }
        auto r = g.upload_new(part, "test ids");
        REQUIRE_MESSAGE(r.ok(), r.status().to_string());
        ids = r.take();
      }
      gpu::Recorder rec(g);
      REQUIRE(rec.begin().ok());
      Status s = ops::record_rfa_attention(g, rec, w, cache, ts, q, k, v, vn, o,
                                           ops::AttentionSpan{(uint32_t)i0, (uint32_t)n, nullptr, ids.valid() ? &ids : nullptr});
      REQUIRE_MESSAGE(s.ok(), s.to_string());
      s = rec.submit_and_wait();
      REQUIRE_MESSAGE(s.ok(), s.to_string());
      const std::vector<float> part = down(o, (size_t)in.B * n * W);
      for (int b = 0; b < in.B; ++b)
        std::copy(part.begin() + (size_t)b * n * W, part.begin() + (size_t)(b + 1) * n * W,
                  out.begin() + ((size_t)b * in.N + i0) * W);
    }
    GpuRun r;
    r.out = out;
    const size_t cells = (size_t)in.B * p.heads * cap;
    r.row_max = down(cache.row_max, cells);
    r.row_sum = down(cache.row_sum, cells);
    r.row_energy = down(cache.row_energy, cells);
    return r;
  }
  // [B][H][cap] -> [B][H][N]
  std::vector<float> trim(const std::vector<float>& x) const {
    std::vector<float> r;
    for (size_t bh = 0; bh < (size_t)in.B * p.heads; ++bh) r.insert(r.end(), x.begin() + bh * cap, x.begin() + bh * cap + in.N);
    return r;
  }
};

// Time of position i of batch row b (0..N-1 when the inputs have none).
inline double time_of(const Inputs& in, int b, int i) { return in.t.empty() ? (double)i : in.t[(size_t)b * in.N + i]; }

// A layer streamed through a sliding-window ring smaller than the stream (capacity window +
// chunk - 1, the fewest a chunk's banded keys fit in), in calls of `chunk` positions, each call's
// timestamps written into their slots first, on context g: the weights, the ring and its timestamps
// as the last call left them (for probes); the outputs [B N][2 H D] and each row's log-partition
// row_max + log row_sum, [B][H][N] as the twin's row_lse.
struct RingRun {
  uint32_t cap = 0;
  ops::AttentionWeightsGpu w;
  ops::AttentionCache cache;
  gpu::Buffer ts;
  std::vector<float> out;
  std::vector<float> lse;
};
inline RingRun run_ring(const AttentionParams& p, const Inputs& in, int window, int chunk, bool kv_f16,
                        gpu::Context& g = test::gpu()) {
  const uint32_t cap = (uint32_t)(window + chunk - 1), H = (uint32_t)p.heads;
  RingRun run;
  run.cap = cap;
  auto wr = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE_MESSAGE(wr.ok(), wr.status().to_string());
  run.w = wr.take();
  auto cr = ops::AttentionCache::create(g, (uint32_t)in.B, H, (uint32_t)p.dim, cap, "ring", (uint32_t)window, kv_f16);
  REQUIRE_MESSAGE(cr.ok(), cr.status().to_string());
  run.cache = cr.take();
  run.ts = Fixture::up_on(g, std::vector<float>((size_t)in.B * cap * 2));
  const size_t W = 2 * (size_t)p.heads * p.dim;
  run.out.assign((size_t)in.B * in.N * W, 0.f);
  run.lse.assign((size_t)in.B * H * in.N, 0.f);
  for (int i0 = 0; i0 < in.N; i0 += chunk) {
    const int n = std::min(chunk, in.N - i0);
    std::vector<float> qc, kc, vc;
    for (int b = 0; b < in.B; ++b) {
      for (int i = i0; i < i0 + n; ++i) {
        float pair[2];
        ops::split_timestamp(time_of(in, b, i), &pair[0], &pair[1]);
        REQUIRE(g.upload(run.ts, pair, 8, ((size_t)b * cap + (size_t)i % cap) * 8).ok());
      }
      auto part = [&](const std::vector<float>& x, std::vector<float>& dst) {
        dst.insert(dst.end(), x.begin() + ((size_t)b * in.N + i0) * W, x.begin() + ((size_t)b * in.N + i0 + n) * W);
      };
      part(in.q, qc);
      part(in.k, kc);
      part(in.v, vc);
    }
    gpu::Buffer q = Fixture::up_on(g, qc), k = Fixture::up_on(g, kc), v = Fixture::up_on(g, vc);
    gpu::Buffer vn = Fixture::up_on(g, std::vector<float>((size_t)in.B * n * W)),
                o = Fixture::up_on(g, std::vector<float>((size_t)in.B * n * W));
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    const Status s = ops::record_rfa_attention(g, rec, run.w, run.cache, run.ts, q, k, v, vn, o, (uint32_t)i0, (uint32_t)n);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    REQUIRE(rec.submit_and_wait().ok());
    std::vector<float> got((size_t)in.B * n * W), mx((size_t)in.B * H * cap), sm(mx.size());
    REQUIRE(g.download(o, got.data(), got.size() * 4).ok());
    REQUIRE(g.download(run.cache.row_max, mx.data(), mx.size() * 4).ok());
    REQUIRE(g.download(run.cache.row_sum, sm.data(), sm.size() * 4).ok());
    for (int b = 0; b < in.B; ++b) {
      std::copy(got.begin() + (size_t)b * n * W, got.begin() + (size_t)(b + 1) * n * W,
                run.out.begin() + ((size_t)b * in.N + i0) * W);
      for (uint32_t h = 0; h < H; ++h)
        for (int i = i0; i < i0 + n; ++i) {
          const size_t slot = ((size_t)b * H + h) * cap + (size_t)i % cap;
          run.lse[((size_t)b * H + h) * in.N + i] = mx[slot] + std::log(sm[slot]);
        }
    }
  }
  return run;
}

// A rectangle [r0, r1) x [c0, c1) of a head's attention maps, and the probe's two maps of it
// (Ahat and A, [rows][cols]) read back. The outputs start as NaN: every cell, masked ones
// included, must be written.
struct Rect {
  uint32_t r0, r1, c0, c1;
  size_t cells() const { return (size_t)(r1 - r0) * (c1 - c0); }
};

struct Maps {
  std::vector<float> ahat, a;
};

inline Maps probe(gpu::Context& g, const ops::AttentionWeightsGpu& w, const ops::AttentionCache& cache, const gpu::Buffer& ts,
           uint32_t b, uint32_t h, const Rect& rc, int view = kAllChannels) {
  const std::vector<float> nan(rc.cells(), std::nanf(""));
  gpu::Buffer ah = Fixture::up_on(g, nan), aa = Fixture::up_on(g, nan);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  const Status s = ops::record_rfa_probe(g, rec, w, cache, ts, b, h, rc.r0, rc.r1, rc.c0, rc.c1, ah, aa, view);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(rec.submit_and_wait().ok());
  Maps m{std::vector<float>(rc.cells()), std::vector<float>(rc.cells())};
  REQUIRE(g.download(ah, m.ahat.data(), rc.cells() * 4).ok());
  REQUIRE(g.download(aa, m.a.data(), rc.cells() * 4).ok());
  return m;
}

inline ref::AttentionOutputs twin(const AttentionParams& p, const Inputs& in, bool matrices = false) {
  const int rows = in.B * in.N;
  auto Q = ref::split_complex(to_double(in.q), rows, p.heads, p.dim);
  auto K = ref::split_complex(to_double(in.k), rows, p.heads, p.dim);
  auto V = ref::split_complex(to_double(in.v), rows, p.heads, p.dim);
  ref::AttentionOutputs o;
  ref::AttentionOptions opt;
  opt.want_matrices = matrices;
  opt.tokens = in.ids.empty() ? nullptr : &in.ids;
  Status s = ref::attention(p, in.B, in.N, Q, K, V, in.t, &o, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return o;
}

// fp32 tolerance: logits of magnitude ~10 carry ~1e-6 relative error, so weights and outputs are
// good to ~1e-5; 2e-4 abs-or-rel leaves margin for N = 2053-term sums.
inline constexpr double kTol = 2e-4;

inline void check_model(const AttentionParams& p, int B, int N, int times, int chunk = 1 << 30, uint32_t seed = 11,
                        const AttentionPath& path = {}, double tol = kTol) {
  CAPTURE(B);
  CAPTURE(N);
  CAPTURE(times);
  CAPTURE(chunk);
  CAPTURE(p.heads);
  CAPTURE(p.dim);
  const Inputs in = make_inputs(p, B, N, seed, times);
  const ref::AttentionOutputs r = twin(p, in);
  Fixture f(p, in, 0, path);
  const GpuRun g = f.run(std::min(chunk, N));
  CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.est, B * N, p.heads, p.dim), tol, tol);
  // Row statistics: compare the log-partition m + log l (m alone is the same max either way).
  std::vector<float> lse;
  const auto mx = f.trim(g.row_max), sm = f.trim(g.row_sum);
  for (size_t k = 0; k < mx.size(); ++k) lse.push_back(mx[k] + std::log(sm[k]));
  CHECK_CLOSE_VEC(lse, r.row_lse, tol * 10, tol);
  if (p.sw.gate) CHECK_CLOSE_VEC(f.trim(g.row_energy), r.energy_lse, tol * 10, tol);
}

// The probe of rows [5, N) x all columns of head 2 in each of `rows` (batch rows), after a run in
// calls of `chunk` rows, against the twin's Ahat and A (M2, H = 3, D = 8 unless given, N = 61,
// B = 2, irregular times). The probes read the row statistics the fused kernel wrote: this checks
// the path that wrote them.
inline void check_probe_after(const AttentionPath& ap, int chunk, std::initializer_list<uint32_t> rows, double tol,
                              int D = 8) {
  CAPTURE(D);
  const AttentionParams p = model("M2", 3, D);
  const int N = 61;
  const Inputs in = make_inputs(p, 2, N, 9, 1);
  const ref::AttentionOutputs r = twin(p, in, true);
  Fixture f(p, in, 0, ap);
  f.run(chunk);
  for (uint32_t b : rows) {
    CAPTURE(b);
    const uint32_t h = 2, r0 = 5, r1 = 61, c0 = 0, c1 = 61;
    const size_t n = (size_t)(r1 - r0) * (c1 - c0);
    gpu::Buffer ah = f.up(std::vector<float>(n)), aa = f.up(std::vector<float>(n));
    gpu::Recorder rec(f.g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_rfa_probe(f.g, rec, f.w, f.cache, f.ts, b, h, r0, r1, c0, c1, ah, aa).ok());
    REQUIRE(rec.submit_and_wait().ok());
    std::vector<double> ra, rb;
    for (uint32_t i = r0; i < r1; ++i)
      for (uint32_t j = c0; j < c1; ++j) {
        const size_t idx = (((size_t)b * 3 + h) * N + i) * N + j;
        ra.push_back(r.Ahat[idx]);
        rb.push_back(r.A[idx]);
      }
    CHECK_CLOSE_VEC(f.down(ah, n), ra, 1e-5, tol);
    CHECK_CLOSE_VEC(f.down(aa, n), rb, 1e-5, tol);
  }
}

// One of 8 settings (mask 0..7) that together turn every variant switch on and off: causal or not,
// output norm, shift rotation, gate, counter-rotation, each covariance, bias and precision (M2,
// H = 3, D = 16 unless given, per-mask head parameters).
inline AttentionParams switch_variant(int mask, int H = 3, int D = 16) {
  AttentionParams p = model("M2", H, D, 17 + (uint32_t)mask);
  p.sw.causal = (mask & 1) == 0;
  p.sw.complex_output_norm = (mask & 4) != 0;
  p.sw.shift_rotation = mask != 3;
  p.sw.gate = mask >= 5;
  p.sw.counter_rotate = mask != 6;
  p.sw.covariance = (Covariance)(mask % 4);
  p.sw.additive_bias = (AdditiveBias)(mask % 3);
  p.sw.precision = (RobustPrecision)((mask / 2) % 3);
  return p;
}

// Kernel paths forced through a context's KernelOptions, and the shapes they are tested on.
inline AttentionPath path(int direct_kv, int lag_table, int split_k, bool kv_f16, int tile = 0, int f16_math = 0) {
  AttentionPath p;
  p.use_default_context = false;
  p.kernels.attention_direct_kv = direct_kv;
  p.kernels.attention_lag_table = lag_table;
  p.kernels.attention_split_k = split_k;
  p.kernels.attention_tile = tile;
  p.kernels.attention_f16_math = f16_math;
  p.kv_f16 = kv_f16;
  p.lag_table = lag_table != 0;
  return p;
}

// The cooperative tile, forced for every call size (fp16 products with f16_math = 1).
inline AttentionPath tile_path(int lag_table, bool kv_f16, int f16_math = 0, int coopmat = 0) {
  AttentionPath p = path(0, lag_table, 0, kv_f16, 1, f16_math);
  p.kernels.attention_coopmat = coopmat;
  return p;
}

inline std::string describe(const AttentionPath& p) {
  const std::string walk = p.kernels.attention_tile == 1
                               ? (p.kernels.attention_coopmat == 2   ? "tile coopmat emulated"
                                  : p.kernels.attention_coopmat == 1
                                      ? (p.kernels.attention_coopmat_per_element == 0 ? "tile coopmat (shared memory)"
                                                                                     : "tile coopmat")
                                  : p.kernels.attention_f16_math == 1 ? "tile f16"
                                                                      : "tile")
                           : p.kernels.attention_direct_kv == 1 ? "direct"
                                                                : "tiled";
  return walk + (p.lag_table ? " +table" : " computed") + " split " + std::to_string(p.kernels.attention_split_k) +
         (p.kv_f16 ? " kv f16" : " kv f32") + (p.device_profile.empty() ? "" : " profile " + p.device_profile);
}

// fp16 K/V: each stored component carries a relative rounding error of at most 2^-11 (4.9e-4).
// Through the cross term (a sum of D products) and the softmax the outputs and log-partitions of
// these unit-scale inputs move by a few times that: the bound below is 8 * 2^-11 = 3.9e-3, abs or
// rel. Measured worst case over this suite on lavapipe: see the MESSAGE lines of the f16 case.
constexpr double kTolF16 = 8.0 / 2048.0;

// A variant's probe over a ring that wrapped: `in` streamed through a ring of `window` keys in calls
// of `chunk` positions; for every batch row and head, check(b, h, rect, maps, tol, whole_band)
// compares the probe with the variant's twin on the rows whose whole band is still in the ring
// (whole_band: their rows sum to 1) and on a block of older rows; rows older than the ring are
// refused, naming the cache.
template <class Check>
void check_wrapped_ring_probe(const AttentionParams& p, const Inputs& in, int window, int chunk, bool kv_f16,
                              const Check& check) {
  gpu::Context& g = test::gpu();
  RingRun run = run_ring(p, in, window, chunk, kv_f16);
  REQUIRE(run.cache.oldest() > 0);  // the ring wrapped
  const uint32_t N = (uint32_t)in.N, lo = run.cache.oldest();
  const uint32_t full = std::min(N - 1, lo + (uint32_t)window - 1);
  const double tol = kv_f16 ? kTolF16 : 1e-4;
  for (uint32_t b = 0; b < (uint32_t)in.B; ++b)
    for (uint32_t h = 0; h < (uint32_t)p.heads; ++h) {
      const Rect ring{full, N, lo, N}, block{lo + 1, N, lo, N - 1};
      check(b, h, ring, probe(g, run.w, run.cache, run.ts, b, h, ring), tol, true);
      check(b, h, block, probe(g, run.w, run.cache, run.ts, b, h, block), tol, false);
    }
  gpu::Buffer ah = test::zeros(1), aa = test::zeros(1);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  const Status s = ops::record_rfa_probe(g, rec, run.w, run.cache, run.ts, 0, 0, lo - 1, lo, lo, lo + 1, ah, aa);
  CHECK(s.code() == Code::invalid_argument);
  CHECK(s.message().find("still in the cache") != std::string::npos);
  REQUIRE(rec.submit_and_wait().ok());
}

// The SDPA yardstick over a filled cache of one batch row: a prefill of N - 3 rows, then 3 decode
// steps one at a time (split-k applies to those); the outputs [N][2 H D] read back.
inline std::vector<float> run_sdpa_prefill_then_decode(gpu::Context& g, ops::AttentionCache& cache, int H, int D, int N) {
  const size_t W = 2 * (size_t)H * D;
  std::vector<float> got;
  for (int i0 = 0; i0 < N;) {
    const int n = i0 == 0 ? N - 3 : 1;
    gpu::Buffer o = Fixture::up_on(g, std::vector<float>((size_t)n * W));
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_sdpa(g, rec, cache, o, (uint32_t)i0, (uint32_t)n, true, 0.f).ok());
    REQUIRE(rec.submit_and_wait().ok());
    std::vector<float> part((size_t)n * W);
    REQUIRE(g.download(o, part.data(), part.size() * 4).ok());
    got.insert(got.end(), part.begin(), part.end());
    i0 += n;
  }
  return got;
}

// Its twin: softmax(Re(conj(q) k) / sqrt(2D)) v per head, causal, in double from the cache contents
// q, k, v ([H][N][D] complex, interleaved); rows [N][2 H D], half-split.
inline std::vector<double> sdpa_causal_twin(const std::vector<float>& q, const std::vector<float>& k,
                                            const std::vector<float>& v, int H, int D, int N) {
  const size_t W = 2 * (size_t)H * D;
  const double scale = 1.0 / std::sqrt(2.0 * D);
  std::vector<double> want((size_t)N * W);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < N; ++i) {
      auto at = [&](const std::vector<float>& x, int p, int d, int c) {
        return (double)x[(((size_t)h * N + p) * D + d) * 2 + c];
      };
      std::vector<double> lg((size_t)i + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int d = 0; d < D; ++d) s += at(q, i, d, 0) * at(k, j, d, 0) + at(q, i, d, 1) * at(k, j, d, 1);
        lg[(size_t)j] = s * scale;
        mx = std::max(mx, lg[(size_t)j]);
      }
      for (double& x : lg) sum += (x = std::exp(x - mx));
      for (int d = 0; d < D; ++d)
        for (int c = 0; c < 2; ++c) {
          double a = 0;
          for (int j = 0; j <= i; ++j) a += lg[(size_t)j] * at(v, j, d, c);
          want[(size_t)i * W + (size_t)c * H * D + (size_t)h * D + d] = a / sum;
        }
    }
  return want;
}

// The SDPA yardstick on path ap at head dim D: a cache of one batch row and H heads filled with
// random q, k, v (seeds 3, 4, 5), a prefill of N - 3 rows and 3 decode steps, against the twin.
inline void check_sdpa_yardstick(const AttentionPath& ap, int H, int D, int N) {
  gpu::Context& g = ap.gpu();
  auto cr = ops::AttentionCache::create(g, 1, H, D, (uint32_t)N, "sdpa cache", 0, false);
  REQUIRE(cr.ok());
  ops::AttentionCache cache = cr.take();
  const std::vector<float> q = test::random_floats((size_t)H * N * D * 2, 3), k = test::random_floats(q.size(), 4),
                           v = test::random_floats(q.size(), 5);
  REQUIRE(g.upload(cache.q, q.data(), q.size() * 4).ok());
  REQUIRE(g.upload(cache.k, k.data(), k.size() * 4).ok());
  REQUIRE(g.upload(cache.v, v.data(), v.size() * 4).ok());
  CHECK_CLOSE_VEC(run_sdpa_prefill_then_decode(g, cache, H, D, N), sdpa_causal_twin(q, k, v, H, D, N), 2e-5, 2e-4);
}

// A discrete GPU's capabilities for the choosers' tests: 32-lane subgroups with the given
// operations, 1024 invocations, 48 KiB of shared memory (NVIDIA's).
inline gpu::Capabilities fake_gpu_caps(VkSubgroupFeatureFlags subgroup_ops = 0) {
  gpu::Capabilities caps;
  caps.device_type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  caps.subgroup_size = 32;
  // Full subgroups of a required size (gpu::subgroup_layout_size), of the one size reported: the
  // subgroup-lane kernels run only with them. Tests that fake another size set subgroup_size.
  caps.subgroup_size_control = true;
  caps.max_workgroup_invocations = 1024;
  caps.max_shared_memory = 49152;
  caps.subgroup_ops = subgroup_ops;
  return caps;
}

struct Shape {
  int B, H, D, N, times, chunk;
};

// The off-tile shapes, each with the call size that exercises it (decode steps reach split-k).
inline const Shape kShapes[] = {
    {1, 1, 4, 1, 0, 1},   {2, 3, 8, 2, 1, 1},    {1, 8, 32, 61, 0, 1},   {2, 3, 64, 127, 1, 3},
    {1, 1, 8, 1000, 0, 4}, {1, 3, 4, 2053, 1, 2053}, {2, 1, 16, 127, 0, 127}};

// The worst |gpu - twin| / (1 + |twin|) of the op's outputs on shape s (inputs of seed 11, run in
// calls of s.chunk rows on path ap): the error a reduced-precision path really makes, for the notes
// and the docs.
inline double worst_relative_error(const AttentionParams& p, const Shape& s, const AttentionPath& ap) {
  const Inputs in = make_inputs(p, s.B, s.N, 11, s.times);
  const ref::AttentionOutputs r = twin(p, in);
  Fixture f(p, in, 0, ap);
  const GpuRun g = f.run(s.chunk);
  const auto want = ref::pack_complex(r.est, s.B * s.N, p.heads, p.dim);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::fabs(g.out[i] - want[i]) / (1.0 + std::fabs(want[i])));
  return worst;
}


}  // namespace rfa::test
