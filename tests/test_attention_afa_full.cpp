// Full (anisotropic) AFA and the tied iterations of either AFA form on the GPU
// (shaders/common/afa_full_attention_body.glsl, afa_attention_body.glsl's passes; docs/variant-afa-full.md)
// against the twin (ref::afa_forward, reference/afa_full_ref.cpp and afa_layer_ref.cpp): every switch
// on off-tile shapes, uniform, irregular and ~1e6 timestamps, one prefill, chunks and decode steps,
// shared key tiles and keys read from the cache, fp32 and fp16 caches, a windowed ring smaller than
// the stream, long context; the tied iterations against n explicit GPU layers that share their
// weights; the checks that name what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "mechanisms/afa/afa_attention.hpp"
#include "ops/rfa_attention.hpp"
#include "reference/afa_ref.hpp"
#include "reference/ops_ref.hpp"
#include "variant_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

AttentionParams full(int H, int D, uint32_t seed, bool unitary = false, bool mix = false, bool causal = true) {
  AttentionParams p = afa(H, D, seed, AfaPrecision::channel_sum, unitary, mix, causal);
  p.variant = AttentionVariant::afa_full;
  return p;
}

AttentionParams tied(AttentionParams p, int n, double momentum) {
  p.afa.irls_iterations = n;
  p.afa.irls_momentum = momentum;
  return p;
}

void check_layer(const AttentionParams& p, const Inputs& in, int chunk, const AttentionPath& ap) {
  const ref::AfaOutputs r = afa_twin(p, in);
  check_fused_against(p, in, chunk, ap, ap.kv_f16 ? kTolF16 : kTol, r.est, r.row_lse);
}

}  // namespace

TEST_CASE("full AFA on the GPU equals its twin over every switch and path") {
  struct Case {
    int B, H, D, N, chunk;
  } cases[] = {{1, 1, 4, 1, 1}, {2, 3, 8, 61, 7}, {1, 2, 16, 100, 100}, {2, 1, 12, 40, 1}};
  for (int k = 0; k < 8; ++k) {
    const bool unitary = k & 1, mix = k & 2, causal = !(k & 4) || k == 7;
    const Case& c = cases[k % 4];
    const AttentionPath ap = k % 3 == 0 ? AttentionPath{} : k % 3 == 1 ? path(0, 1, -1, false) : path(1, 1, -1, true);
    const int times = k % 3;  // uniform, irregular, ~1e6
    INFO("unitary " << unitary << ", mix " << mix << ", causal " << causal << ", " << describe(ap) << ", times "
                    << times << ", N " << c.N << ", D " << c.D);
    const AttentionParams p = full(c.H, c.D, 500 + (uint32_t)k, unitary, mix, causal);
    // Non-causal rows see keys that later calls add: one call only.
    check_layer(p, make_inputs(p, c.B, c.N, 60 + (uint32_t)k, times), causal ? c.chunk : c.N, ap);
  }
}

TEST_CASE("tied iterations on the GPU equal the twin: both forms, momentum, chunks and decode steps") {
  struct Case {
    bool full;
    int n;
    double g;
    bool mix;
    int B, H, D, N, chunk, times;
    AttentionPath ap;
  } cases[] = {{true, 3, 0.3, true, 2, 2, 8, 45, 7, 1, AttentionPath{}},
               {false, 2, 0.0, true, 1, 3, 8, 30, 1, 0, path(1, 1, -1, true)},
               {true, 4, 0.0, false, 1, 2, 4, 50, 50, 2, path(0, 1, -1, false)},
               {false, 3, 0.2, false, 2, 1, 16, 33, 5, 1, AttentionPath{}}};
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.full);
    CAPTURE(c.n);
    CAPTURE(c.g);
    CAPTURE(c.chunk);
    CAPTURE(describe(c.ap));
    AttentionParams p = c.full ? full(c.H, c.D, 70 + (uint32_t)k, false, c.mix)
                               : afa(c.H, c.D, 70 + (uint32_t)k, AfaPrecision::channel_sum, false, c.mix);
    ++k;
    p = tied(p, c.n, c.g);
    check_layer(p, make_inputs(p, c.B, c.N, 80 + (uint32_t)k, c.times), c.chunk, c.ap);
  }
}

TEST_CASE("n tied iterations on the GPU equal n explicit GPU layers that share their weights") {
  // z1 = V, z2 = mix(z1, AFA(Q, K, z1)), z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k)) + g (z_k - z_{k-1}):
  // each explicit pass is a one-pass layer with the same parameters (no mix, horizon 0, so its output
  // is the aggregate in the original frame), the mix and momentum applied here in double; the tied
  // layer (horizon 0) must give the last iterate.
  const int B = 2, N = 37, H = 2, D = 8, n = 3;
  const double g = 0.25;
  AttentionParams p = tied(full(H, D, 91, false, true), n, g);
  p.afa.pred_dt = 0;
  const Inputs in = make_inputs(p, B, N, 92, 1);
  Fixture whole(p, in);
  const GpuRun tied_run = whole.run(N);

  AttentionParams one = p;
  one.afa.irls_iterations = 1;
  one.afa.irls_momentum = 0;
  one.afa.mix = false;
  one.afa.delta.clear();
  const size_t W = 2 * (size_t)H * D;
  std::vector<double> prev, z(in.v.begin(), in.v.end());
  for (int it = 0; it < n; ++it) {
    Inputs pass = in;
    if (it > 0) pass.q = pass.k = pass.v = std::vector<float>(z.begin(), z.end());
    Fixture f(one, pass);
    const GpuRun r = f.run(N);
    std::vector<double> next(z.size());
    for (size_t x = 0; x < z.size(); ++x) {
      const size_t ch = (x % W) % ((size_t)H * D);  // half-split rows: [Re of H*D | Im of H*D]
      const double s = 1.0 / (1.0 + std::exp(-p.afa.delta[ch]));
      next[x] = (1.0 - s) * z[x] + s * r.out[x] + (it > 0 ? g * (z[x] - prev[x]) : 0.0);
    }
    prev = z;
    z = next;
  }
  CHECK_CLOSE_VEC(tied_run.out, z, 5e-5, 5e-5);
}

TEST_CASE("full AFA and its tied iterations stream through a windowed ring smaller than the stream") {
  struct Case {
    int n, window, chunk;
    bool kv_f16;
  } cases[] = {{1, 11, 5, false}, {3, 9, 1, true}};
  for (const Case& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.window);
    CAPTURE(c.chunk);
    const AttentionParams p = tied(full(2, 8, 101 + (uint32_t)c.n, false, true), c.n, c.n > 1 ? 0.2 : 0.0);
    const Inputs in = make_inputs(p, 2, 60, 102, 1);
    const ref::AfaOutputs r = afa_twin(p, in, false, c.window);
    const RingRun run = run_ring(p, in, c.window, c.chunk, c.kv_f16);
    REQUIRE(run.cache.oldest() > 0);  // the ring wrapped
    const double tol = c.kv_f16 ? kTolF16 : kTol;
    CHECK_CLOSE_VEC(run.out, ref::pack_complex(r.est, in.B * in.N, p.heads, p.dim), tol, tol);
    CHECK_CLOSE_VEC(run.lse, r.row_lse, tol * 10, tol);
  }
}

TEST_CASE("full AFA stays exact at long context and large timestamps") { check_afa_long_context(full(2, 8, 9)); }

TEST_CASE("full AFA and tied iterations: bad parameters are named") {
  gpu::Context& g = test::gpu();
  auto fails = [&](const AttentionParams& p, const std::string& what) {
    auto w = ops::AttentionWeightsGpu::create(g, p);
    REQUIRE_FALSE(w.ok());
    INFO(w.status().message());
    CHECK(w.status().message().find(what) != std::string::npos);
  };
  AttentionParams p = full(2, 4, 3);
  p.afa.precision = AfaPrecision::one_channel;
  fails(p, "precision");
  p = full(2, 4, 3);
  p.afa.eta2[5] = p.afa.gamma2[5] = 0;
  p.afa.eps = 0;
  fails(p, "params.afa.eta2[5]");
  p = full(2, 4, 3);
  p.afa.sigma2[2] = p.afa.gamma2[2] = 0;
  p.afa.mu[2] = 0.1;
  p.afa.eps = 0;
  fails(p, "params.afa.sigma2[2]");
  p = tied(full(2, 4, 3), 0, 0);
  fails(p, "irls_iterations 0");
  p = tied(afa(2, 4, 3), 17, 0);
  fails(p, "irls_iterations 17");
  p = tied(full(2, 4, 3), 2, 1.0);
  fails(p, "irls_momentum");
  p = tied(full(2, 4, 3, false, false, false), 2, 0);
  fails(p, "causal");
}

TEST_CASE("the full AFA kernel's tiling is AFA's, and says which kernel it is") {
  gpu::Capabilities caps = test::gpu().caps();
  caps.device_type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  caps.max_shared_memory = 16384;
  const ops::AttentionTiling t = ops::choose_afa_tiling(caps, KernelOptions{}, 512, 64, 4096, true);
  const ops::AttentionTiling m = ops::choose_afa_tiling(caps, KernelOptions{}, 512, 64, 4096, false);
  CHECK(t.shared_bytes == m.shared_bytes);
  CHECK(t.shared_bytes <= 16384);
  CHECK(t.why.find("full AFA kernel") != std::string::npos);
  CHECK(m.why.find("full AFA") == std::string::npos);
  CHECK(ops::choose_afa_tiling(caps, KernelOptions{}, 1, 64, 4096, true).threads_per_row > 1);  // decode splits a row
}
