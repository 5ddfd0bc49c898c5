// Accumulated rotations (ACC, docs/variant-acc.md) on the GPU: the phase scan (rfa_phase_scan.comp)
// and the rotate pass and epilogue reading the phase ring, against the ACC twin (ref::acc_attention,
// written independently from the contract) in RFA's pure-rotation limit, against RFA's own omega t
// clock (rope steps give theta_i = omega (i + 1)), RFA's full pair terms with accumulated phases
// against the RFA twin, and the scan's accuracy over a long stream.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "ops/rfa_attention.hpp"
#include "reference/acc_ref.hpp"
#include "reference/ops_ref.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// RFA settings whose logit is the ACC score Re(Q~^H K~) / sqrt(2D) and whose weights are undecayed:
// mu = 0 (E = 1), no additive bias, Gaussian kernel on the cross term only (L = P E cross) with
// P = 1/sqrt(D), tau = 1/sqrt(2); no gate, norms or lag shift.
AttentionParams acc_limit(int H, int D, PhaseSource phase, ref::AccValueRotation values, uint32_t seed) {
  AttentionParams p = model("M2.6", H, D, seed);
  for (HeadParams& hp : p.head) {
    hp.mu = 0;
    hp.tau = 1.0 / std::sqrt(2.0);
    hp.lag_shift = 0;
  }
  p.sw.additive_bias = AdditiveBias::none;
  p.sw.precision = RobustPrecision::inv_sqrt_d;
  p.sw.robust = false;
  p.sw.full_residual = false;
  p.sw.gate = false;
  p.sw.complex_output_norm = false;
  p.sw.shift_rotation = false;
  p.sw.stationary_values = values != ref::AccValueRotation::none;
  p.sw.counter_rotate = values == ref::AccValueRotation::counter_rotate;
  p.phase = phase;
  p.step_seed = 977;
  p.step_layer = 3;
  return p;
}

ref::AccOutputs acc_twin(const AttentionParams& p, const Inputs& in, ref::AccValueRotation values) {
  const int rows = in.B * in.N, H = p.heads, D = p.dim;
  ref::AccStepSource src;
  src.kind = p.phase == PhaseSource::accumulated_random ? ref::AccStepKind::random : ref::AccStepKind::rope;
  src.seed = p.step_seed;
  src.layer = p.step_layer;
  std::vector<double> phi;
  Status s = ref::acc_steps(src, in.B, in.N, 0, H, D, p.omega, {}, &phi);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  ref::AccLayer L;
  L.heads = H;
  L.dim = D;
  L.value_rotation = values;
  ref::AccOutputs o;
  s = ref::acc_attention(L, in.B, in.N, ref::split_complex(to_double(in.q), rows, H, D),
                         ref::split_complex(to_double(in.k), rows, H, D), ref::split_complex(to_double(in.v), rows, H, D),
                         phi, &o);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return o;
}

}  // namespace

TEST_CASE("accumulated phases on the GPU equal the ACC twin") {
  struct Case {
    int B, H, D, N, chunk;
  } cases[] = {{1, 1, 4, 1, 1}, {2, 3, 8, 61, 1}, {1, 3, 32, 127, 127}, {2, 1, 8, 127, 9}, {1, 2, 64, 70, 70}};
  const ref::AccValueRotation modes[] = {ref::AccValueRotation::none, ref::AccValueRotation::counter_rotate,
                                         ref::AccValueRotation::rotate_only};
  int k = 0;
  for (PhaseSource phase : {PhaseSource::accumulated_rope, PhaseSource::accumulated_random})
    for (const Case& c : cases)
      for (const AttentionPath& ap : {AttentionPath{}, tile_path(0, false), path(1, 1, 3, true)}) {
        const ref::AccValueRotation values = modes[k++ % 3];
        CAPTURE((int)phase);
        CAPTURE((int)values);
        CAPTURE(describe(ap));
        CAPTURE(c.N);
        CAPTURE(c.D);
        const AttentionParams p = acc_limit(c.H, c.D, phase, values, 5 + (uint32_t)k);
        const Inputs in = make_inputs(p, c.B, c.N, 31 + (uint32_t)k, 0);
        const ref::AccOutputs r = acc_twin(p, in, values);
        Fixture f(p, in, 0, ap);
        const GpuRun g = f.run(c.chunk);
        const double tol = ap.kv_f16 ? kTolF16 : kTol;
        CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.est, c.B * c.N, c.H, c.D), tol, tol);
        std::vector<float> lse;
        const auto mx = f.trim(g.row_max), sm = f.trim(g.row_sum);
        for (size_t i = 0; i < mx.size(); ++i) lse.push_back(mx[i] + std::log(sm[i]));
        CHECK_CLOSE_VEC(lse, r.row_lse, tol, tol);
      }
}

TEST_CASE("rope steps reproduce RFA's omega t clock at t = position + 1") {
  // The inclusive prefix of constant steps is theta_i = omega (i + 1): an RFA layer (every switch
  // of M2.7, the gate included; no lag shift) fed timestamps 1, 2, ... gives the same outputs.
  AttentionParams p = model("M2.7", 3, 16, 41);
  p.sw.shift_rotation = false;
  for (bool stationary_values : {true, false}) {
    CAPTURE(stationary_values);
    p.sw.stationary_values = stationary_values;
    Inputs in = make_inputs(p, 2, 90, 12, 0);
    for (int b = 0; b < in.B; ++b)
      for (int i = 0; i < in.N; ++i) in.t.push_back(i + 1.0);
    AttentionParams acc = p;
    acc.phase = PhaseSource::accumulated_rope;
    Fixture clock(p, in), accumulated(acc, in);
    const GpuRun a = clock.run(30), b = accumulated.run(30);
    CHECK_CLOSE_VEC(b.out, to_double(a.out), 1e-5, 1e-5);
    CHECK_CLOSE_VEC(b.row_energy, to_double(a.row_energy), 1e-5, 1e-5);
    // ... and equals the RFA twin, which has the stationary_values switch too.
    check_model(p, 2, 61, 1, 7);
  }
}

TEST_CASE("the phase scan stays accurate over a long stream") {
  // 20,000 random steps of up to 2 rad in one call (two scan dispatches), then 300 one-position
  // calls: the ring's (hi, lo) phases against the twin's prefix in double.
  const int H = 2, D = 8, N1 = 20000, N2 = 300, N = N1 + N2;
  AttentionParams p = model("M1", H, D, 3);
  for (double& w : p.omega) w = 1.0 / (1.0 + (&w - p.omega.data()));  // 1, 1/2, ...: up to 2 rad a step
  p.phase = PhaseSource::accumulated_random;
  p.step_seed = 0xdeadbeef;
  p.step_layer = 7;
  gpu::Context& g = test::gpu();
  auto wr = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE(wr.ok());
  const ops::AttentionWeightsGpu w = wr.take();
  auto cr = ops::AttentionCache::create(g, 1, H, D, N, "scan cache", 0, false, true);
  REQUIRE(cr.ok());
  ops::AttentionCache cache = cr.take();
  auto scan = [&](uint32_t pos0, uint32_t n) {
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    const Status s = ops::record_rfa_phase_scan(g, rec, w, cache, ops::AttentionSpan{pos0, n, nullptr});
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    REQUIRE(rec.submit_and_wait().ok());
  };
  scan(0, N1);
  for (int i = N1; i < N; ++i) scan((uint32_t)i, 1);
  std::vector<float> ring((size_t)N * H * D * 2);
  REQUIRE(g.download(cache.theta, ring.data(), ring.size() * 4).ok());
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::random;
  src.seed = p.step_seed;
  src.layer = p.step_layer;
  std::vector<double> phi, theta;
  REQUIRE(ref::acc_steps(src, 1, N, 0, H, D, p.omega, {}, &phi).ok());
  REQUIRE(ref::acc_prefix(phi, 1, N, H * D, &theta).ok());
  double worst = 0;
  for (size_t c = 0; c < theta.size(); ++c) {
    const double got = (double)ring[2 * c] + (double)ring[2 * c + 1];
    worst = std::max(worst, std::fabs(ref::acc_wrap(got - theta[c])));
  }
  MESSAGE("phase scan: worst |theta_gpu - theta_twin| over " << N << " positions = " << worst << " rad");
  CHECK(worst < 1e-6);
}

TEST_CASE("RFA with an accumulated phase: GPU and the RFA twin, and the two twins agree") {
  // The natural combined variant (docs/variant-acc.md): RFA's decay, precision, Student-t kernel and
  // gate with accumulated phases. The RFA twin takes its phases from the ACC twin's steps and prefix.
  for (PhaseSource phase : {PhaseSource::accumulated_rope, PhaseSource::accumulated_random}) {
    AttentionParams p = model("M2.7", 3, 8, 23);
    p.phase = phase;
    p.step_seed = 4242;
    p.step_layer = 1;
    CAPTURE((int)phase);
    for (const AttentionPath& ap : {AttentionPath{}, tile_path(1, false)}) {
      CAPTURE(describe(ap));
      check_model(p, 2, 61, 1, 5, 11, ap);
      p.sw.stationary_values = false;
      check_model(p, 1, 40, 0, 40, 12, ap);
      p.sw.stationary_values = true;
    }
  }
  // In the pure-rotation limit the RFA twin with accumulated phases is the ACC twin.
  for (ref::AccValueRotation values : {ref::AccValueRotation::none, ref::AccValueRotation::counter_rotate,
                                       ref::AccValueRotation::rotate_only}) {
    const AttentionParams p = acc_limit(3, 8, PhaseSource::accumulated_random, values, 2);
    const Inputs in = make_inputs(p, 2, 33, 8, 1);
    const ref::AccOutputs a = acc_twin(p, in, values);
    const ref::AttentionOutputs r = twin(p, in);
    double worst = 0;
    for (size_t i = 0; i < a.est.size(); ++i) worst = std::max(worst, std::abs(a.est[i] - r.est[i]));
    CAPTURE((int)values);
    CHECK(worst < 1e-12);
  }
}

TEST_CASE("an accumulated phase needs the cache's phase ring") {
  AttentionParams p = acc_limit(1, 4, PhaseSource::accumulated_rope, ref::AccValueRotation::counter_rotate, 1);
  gpu::Context& g = test::gpu();
  auto wr = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE(wr.ok());
  const ops::AttentionWeightsGpu w = wr.take();
  auto cr = ops::AttentionCache::create(g, 1, 1, 4, 8, "no ring");
  REQUIRE(cr.ok());
  ops::AttentionCache cache = cr.take();
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  const Status s = ops::record_rfa_phase_scan(g, rec, w, cache, ops::AttentionSpan{0, 4, nullptr});
  CHECK(!s.ok());
  CHECK(s.message().find("phase ring") != std::string::npos);
}

TEST_CASE("learned accumulated steps: the token ids' angles on the GPU equal the RFA twin's") {
  // docs/variant-acc.md: phi_i = Phi[token_i] (a [vocab][D] table shared by the heads), with every
  // RFA switch (M2.7 with the gate) and the pure-rotation limit against the ACC twin's prefix.
  for (const char* name : {"M2.7", "M2.6"}) {
    CAPTURE(name);
    AttentionParams p = model(name, 3, 8, 19);
    p.phase = PhaseSource::accumulated_learned;
    p.step_vocab = 11;
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    for (int k = 0; k < 11 * 8; ++k) p.step_table.push_back(u(rng));
    Inputs in = make_inputs(p, 2, 75, 8, 1);
    for (int i = 0; i < 2 * 75; ++i) in.ids.push_back((int32_t)(rng() % 11));
    const ref::AttentionOutputs r = twin(p, in);
    for (const AttentionPath& ap : {AttentionPath{}, path(0, 1, -1, true), tile_path(1, false)}) {
      CAPTURE(describe(ap));
      for (int chunk : {75, 1, 13}) {
        Fixture f(p, in, 0, ap);
        CHECK_CLOSE_VEC(f.run(chunk).out, ref::pack_complex(r.est, 150, 3, 8), ap.kv_f16 ? kTolF16 : kTol,
                        ap.kv_f16 ? kTolF16 : kTol);
      }
    }
    // The steps follow the ids: other ids give other outputs (the test can tell).
    Inputs other = in;
    for (int32_t& id : other.ids) id = (id + 1) % 11;
    Fixture f(p, other);
    const GpuRun g = f.run(75);
    double diff = 0;
    const auto want = ref::pack_complex(r.est, 150, 3, 8);
    for (size_t i = 0; i < g.out.size(); ++i) diff = std::max(diff, std::fabs(g.out[i] - want[i]));
    CHECK(diff > 1e-2);
  }
  // Without the ids the op refuses, naming them.
  AttentionParams p = model("M2", 1, 4, 3);
  p.phase = PhaseSource::accumulated_learned;
  p.step_vocab = 2;
  p.step_table.assign(8, 0.5);
  Inputs in = make_inputs(p, 1, 4, 1, 0);
  Fixture f(p, in);
  gpu::Buffer q = f.up(in.q), k = f.up(in.k), v = f.up(in.v), vn = f.up(in.v), o = f.up(in.v);
  gpu::Recorder rec(f.g);
  REQUIRE(rec.begin().ok());
  const Status s = ops::record_rfa_attention(f.g, rec, f.w, f.cache, f.ts, q, k, v, vn, o, 0, 4);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("token ids") != std::string::npos);
}

TEST_CASE("accumulated phases at any head dim: the scan, the rotate pass and the fused kernel") {
  // D not a power of two (and odd): the phase scan's threads per (row, head, dim), the rotate pass
  // and the fused kernel on the walk from the cache, the tile and split-k over fp16 caches.
  const ref::AccValueRotation modes[] = {ref::AccValueRotation::none, ref::AccValueRotation::counter_rotate,
                                         ref::AccValueRotation::rotate_only};
  int k = 0;
  for (int D : {12, 20, 40, 80, 128})  // even D (odd D: RFA only, test_head_dims)
    for (const AttentionPath& ap : {path(1, 0, 0, false), tile_path(1, false), path(0, 1, 3, true)}) {
      const PhaseSource phase = k % 2 == 0 ? PhaseSource::accumulated_rope : PhaseSource::accumulated_random;
      const ref::AccValueRotation values = modes[k++ % 3];
      const bool decode = ap.kernels.attention_split_k > 1;
      const int B = decode ? 2 : 1, N = decode ? 9 : 37, chunk = decode ? 1 : 13;
      CAPTURE(D);
      CAPTURE((int)phase);
      CAPTURE((int)values);
      CAPTURE(describe(ap));
      const AttentionParams p = acc_limit(2, D, phase, values, 70 + (uint32_t)k);
      const Inputs in = make_inputs(p, B, N, 90 + (uint32_t)k, 0);
      const ref::AccOutputs r = acc_twin(p, in, values);
      Fixture f(p, in, 0, ap);
      const GpuRun g = f.run(chunk);
      const double tol = ap.kv_f16 ? kTolF16 : kTol;
      CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.est, B * N, 2, D), tol, tol);
      std::vector<float> lse;
      const auto mx = f.trim(g.row_max), sm = f.trim(g.row_sum);
      for (size_t i = 0; i < mx.size(); ++i) lse.push_back(mx[i] + std::log(sm[i]));
      CHECK_CLOSE_VEC(lse, r.row_lse, tol, tol);
    }
}
