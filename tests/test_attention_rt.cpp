// RT-RFA layers on the GPU (the rotate pass's UNIT mode and shaders/rt_attention*.comp,
// docs/variant-rt.md) against the RT twin (ref::rt_attention, written from the contract): both
// covariances and kernels, causal and not, on off-tile shapes, uniform, irregular and ~1e6
// timestamps, in one prefill and in calls of a few rows, shared-memory key tiles and keys read
// from the cache, fp32 and fp16 K/V caches; long lags where the literal precision overflows; zero
// magnitudes; tangency; the layer's checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/rfa_attention.hpp"
#include "mechanisms/rt/rt_attention.hpp"
#include "reference/ops_ref.hpp"
#include "reference/rt_ref.hpp"
#include "rfa/session.hpp"
#include "variant_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// GPU outputs (the tangent updates T) and log-partitions against the twin.
void check_rt(const AttentionParams& p, const Inputs& in, int chunk, const AttentionPath& ap, double tol) {
  const ref::RtOutputs r = rt_twin(p, in);
  check_fused_against(p, in, chunk, ap, tol, r.T, r.row_lse);
}

}  // namespace

TEST_CASE("RT-RFA on the GPU equals the RT twin over every switch") {
  struct Case {
    int B, H, D, N, chunk;
  } cases[] = {{1, 1, 4, 1, 1}, {2, 3, 8, 61, 7}, {1, 2, 32, 127, 127}, {2, 1, 64, 70, 9}, {1, 3, 16, 40, 1}};
  int k = 0;
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate})
    for (RtKernel kernel : {RtKernel::student_t, RtKernel::gaussian})
      for (bool causal : {true, false})
        for (int rep = 0; rep < 2; ++rep) {
          const Case& c = cases[k % 5];
          const AttentionPath ap = k % 3 == 0 ? AttentionPath{} : k % 3 == 1 ? path(0, 1, -1, false) : path(1, 1, -1, true);
          const int times = k % 3;
          ++k;
          if (!shard_takes((size_t)k - 1)) continue;
          CAPTURE((int)cov);
          CAPTURE((int)kernel);
          CAPTURE(causal);
          CAPTURE(describe(ap));
          CAPTURE(times);
          CAPTURE(c.N);
          CAPTURE(c.D);
          const AttentionParams p = rt(c.H, c.D, 200 + (uint32_t)k, cov, kernel, causal);
          const Inputs in = make_inputs(p, c.B, c.N, 9 + (uint32_t)k, times);
          check_rt(p, in, causal ? c.chunk : c.N, ap, ap.kv_f16 ? kTolF16 : kTol);
        }
}

TEST_CASE("RT-RFA decode steps and chunked prefill equal one prefill; the update is tangent") {
  const AttentionParams p = rt(3, 8, 5, RtCovariance::ou_rate);
  const Inputs in = make_inputs(p, 2, 90, 21, 1);
  Fixture whole(p, in), steps(p, in), pieces(p, in);
  const GpuRun a = whole.run(90);
  CHECK_CLOSE_VEC(steps.run(1).out, to_double(a.out), 1e-5, 1e-5);
  CHECK_CLOSE_VEC(pieces.run(13).out, to_double(a.out), 1e-5, 1e-5);
  // Re(vh_i^H T_i) = 0 against the twin's unit values, and T_0 = 0 (its only key is itself).
  const ref::RtOutputs r = rt_twin(p, in);
  const int H = 3, D = 8, HD = H * D;
  double worst = 0;
  for (int row = 0; row < 2 * 90; ++row)
    for (int h = 0; h < H; ++h) {
      double dot = 0;
      for (int d = 0; d < D; ++d) {
        const ref::cd vh = r.v_hat[((size_t)row * H + h) * D + d];
        dot += vh.real() * a.out[(size_t)row * 2 * HD + h * D + d] + vh.imag() * a.out[(size_t)row * 2 * HD + HD + h * D + d];
      }
      worst = std::max(worst, std::fabs(dot));
    }
  CHECK(worst < 1e-5);
  for (int h = 0; h < H; ++h)
    for (int d = 0; d < D; ++d) CHECK(std::fabs(a.out[(size_t)h * D + d]) < 1e-6);
}

TEST_CASE("RT-RFA stays finite and exact at long lags and large timestamps") {
  // mu l up to ~300: the literal S e^{2 mu l} overflows float (and double past mu l ~ 355); the log
  // form does not.
  AttentionParams p = rt(2, 8, 9);
  p.rt.mu = {0.0, 0.25};
  Inputs in = make_inputs(p, 1, 300, 33, 0);
  for (int i = 0; i < in.N; ++i) in.t.push_back(4.0 * i);
  const ref::RtOutputs r = rt_twin(p, in);
  Fixture f(p, in);
  const GpuRun g = f.run(150);
  for (float x : g.out) REQUIRE(std::isfinite(x));
  CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.T, in.N, p.heads, p.dim), kTol, kTol);
  check_rt(p, make_inputs(p, 2, 120, 34, 2), 40, AttentionPath{}, kTol);
}

TEST_CASE("RT-RFA: zero magnitudes carry no direction; no noise gives cosine attention") {
  // eps = 0 and a zero value: that key has log P = -inf (weight 0) and its own row is zeros.
  AttentionParams p = rt(1, 4, 13);
  p.rt.eps = 0;
  Inputs in = make_inputs(p, 1, 12, 3, 1);
  for (int d = 0; d < 8; ++d) in.v[(size_t)5 * 8 + d] = 0.f;
  const ref::RtOutputs r = rt_twin(p, in);
  Fixture f(p, in);
  const GpuRun g = f.run(12);
  for (float x : g.out) REQUIRE(std::isfinite(x));
  CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.T, in.N, 1, 4), kTol, kTol);
  // No noise: P = 1 / tau_th2 for every pair, whatever the magnitudes.
  AttentionParams q = rt(2, 8, 14, RtCovariance::stationary, RtKernel::gaussian);
  for (size_t h = 0; h < 2; ++h) q.rt.s2t[h] = q.rt.eta2[h] = q.rt.gamma2[h] = 0.0;
  check_rt(q, make_inputs(q, 2, 50, 4, 1), 50, AttentionPath{}, kTol);
}

TEST_CASE("RT-RFA layers: bad parameters are named") {
  gpu::Context& g = test::gpu();
  AttentionParams p = rt(2, 4, 3);
  p.rt.tau_th2[1] = 0.0;
  auto w = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("params.rt.tau_th2[1]") != std::string::npos);
  p = rt(2, 4, 3);
  p.rt.beta.pop_back();
  w = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("params.rt.beta holds 1 values, 2 expected") != std::string::npos);
  p = rt(2, 4, 3);
  p.rt.mu[0] = -1;
  CHECK_FALSE(ops::AttentionWeightsGpu::create(g, p).ok());
  gpu::Capabilities caps = g.caps();
  caps.device_type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  caps.max_shared_memory = 16384;
  const ops::AttentionTiling t = ops::choose_rt_tiling(caps, KernelOptions{}, 512, 64, 4096);
  CHECK(t.shared_bytes <= 16384);
  CHECK(t.shared_bytes == ops::rt_shared_bytes(t, 64));
  CHECK(t.why.find("RT-RFA kernel") != std::string::npos);
}

TEST_CASE("an RT head's kernel curves (the viewer's panel) equal the twin's") {
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate}) {
    Model m;
    m.arch = Architecture::attention;
    m.n_heads = 3;
    m.head_dim = 4;
    m.single.params = rt(3, 4, 71, cov);
    const std::vector<double> lags = {0.0, 0.5, 3.0, 40.0, 900.0};
    const ref::RtParams tp = ref::rt_twin_params(m.single.params);
    for (int h = 0; h < 3; ++h) {
      auto cv = head_curves(m, 0, h, lags);
      REQUIRE_MESSAGE(cv.ok(), cv.status().to_string());
      const std::vector<double> logp = ref::rt_precision_kernel(tp, h, 1.0, lags);
      for (size_t l = 0; l < lags.size(); ++l) {
        CHECK(cv->decay[l] == doctest::Approx(std::exp(-tp.head[(size_t)h].mu * lags[l])).epsilon(1e-12));
        CHECK(cv->vcov[l] == doctest::Approx(ref::rt_cov(tp, h, lags[l])).epsilon(1e-12));
        CHECK(std::log(cv->precision[l]) == doctest::Approx(logp[l]).epsilon(1e-12));
        CHECK(cv->bias[l] == doctest::Approx(tp.head[(size_t)h].beta * logp[l]).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("RT-RFA: a zero query or key is at distance |qh - kh|^2, as in the twin") {
  AttentionParams p = rt(2, 4, 17);
  Inputs in = make_inputs(p, 1, 20, 6, 1);
  const size_t W = 2 * 2 * 4;
  for (size_t d = 0; d < W; ++d) {
    in.q[4 * W + d] = 0.f;  // position 4's query
    in.k[7 * W + d] = 0.f;  // position 7's key
  }
  check_rt(p, in, 20, AttentionPath{}, kTol);
}

TEST_CASE("RT-RFA at any head dim: every walk, decode merges and fp16 caches") {
  // D not a power of two (and odd): the unit directions of the rotate pass, the key tiles and the
  // merge of the threads that share a decode row's keys (DC components a round, a divisor of D).
  int k = 0;
  for (int D : {12, 20, 40, 48, 80, 96, 128})  // even D (odd D: RFA only, test_head_dims)
    for (const AttentionPath& ap : {path(1, 1, -1, false), path(0, 1, -1, true)}) {
      const RtCovariance cov = k % 2 == 0 ? RtCovariance::stationary : RtCovariance::ou_rate;
      const RtKernel kernel = k % 4 < 2 ? RtKernel::student_t : RtKernel::gaussian;
      const bool decode = (k / 2) % 2 == 0;
      ++k;
      if (!shard_takes((size_t)k - 1)) continue;
      CAPTURE(D);
      CAPTURE(describe(ap));
      CAPTURE(decode);
      const AttentionParams p = rt(2, D, 500 + (uint32_t)k, cov, kernel, true);
      const Inputs in = make_inputs(p, decode ? 2 : 1, decode ? 9 : 37, 60 + (uint32_t)k, k % 3);
      check_rt(p, in, decode ? 1 : 13, ap, ap.kv_f16 ? kTolF16 : kTol);
    }
}
