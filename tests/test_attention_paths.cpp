// Every path of the fused attention kernel against the double-precision twin: shared-memory key
// tiles or keys read from the cache, E/B/P from the integer-lag table or computed per pair,
// split-k decode with its reduce pass, fp32 or fp16 K/V caches. Each path is forced through the
// context's KernelOptions (lavapipe would otherwise take only its own choice), on off-tile shapes
// (N in {1, 2, 61, 127, 1000, 2053}, D in {4, 8, 32, 64}, H in {1, 3, 8}, B in {1, 2}), uniform
// and irregular timestamps. Plus: split-k == one pass, table == computed terms, probes over the
// row statistics the split-k reduce writes, fp16 error bounds, and the tiling choice as data.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "gpu/capabilities.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/sdpa.hpp"
#include "reference/attention_ref.hpp"

using namespace rfa;
using namespace rfa::test;


TEST_CASE("every kernel path matches the twin on off-tile shapes") {
  const AttentionPath paths[] = {
      path(1, 0, 0, false),  // CPU devices' path, every pair's terms computed
      path(0, 1, 0, false),  // GPU tiles with the lag table
      path(1, 1, 3, false),  // split-k in 3, keys from the cache
      path(0, 0, 7, false),  // split-k in 7, tiles, computed terms
  };
  int k = 0;
  for (const AttentionPath& ap : paths)
    for (const Shape& s : kShapes) {
      CAPTURE(describe(ap));
      const char* name = (k % 3 == 0) ? "M2.7" : "M2";  // the gate (energy state) on some
      if (!shard_takes((size_t)k++)) continue;
      check_model(model(name, s.H, s.D), s.B, s.N, s.times, s.chunk, 11, ap);
    }
}

TEST_CASE("every switch on the split-k and table paths") {
  size_t item = 0;
  for (const AttentionPath& ap : {path(0, 1, 4, false), path(1, 0, 2, false)})
    for (int mask = 0; mask < 8; ++mask) {
      if (!shard_takes(item++)) continue;
      const AttentionParams p = switch_variant(mask);
      CAPTURE(describe(ap));
      CAPTURE(mask);
      // Non-causal layers: one position (the only prefix a non-causal decode step equals the twin on).
      check_model(p, 2, p.sw.causal ? 61 : 1, mask % 2, p.sw.causal ? 2 : 1, 11, ap);
    }
}

TEST_CASE("split-k equals the single pass, and the lag table equals the computed terms") {
  const AttentionParams p = model("M2.7", 3, 32);
  const Inputs in = make_inputs(p, 2, 300, 5, 0);  // integer times: every pair can use the table
  auto run = [&](const AttentionPath& ap) {
    Fixture f(p, in, 0, ap);
    GpuRun r = f.run(1);  // decode steps: split-k applies
    r.row_max = f.trim(r.row_max);
    r.row_sum = f.trim(r.row_sum);
    r.row_energy = f.trim(r.row_energy);
    return r;
  };
  const GpuRun one = run(path(0, 0, 1, false));
  for (const AttentionPath& ap : {path(0, 0, 5, false), path(0, 0, 64, false), path(0, 1, 1, false)}) {
    CAPTURE(describe(ap));
    const GpuRun other = run(ap);
    // Same fp32 arithmetic merged in a different order (split-k) or the same terms read from a
    // table built by the same code: agreement to a few fp32 ulps of the result's scale.
    CHECK_CLOSE_VEC(other.out, to_double(one.out), 1e-6, 1e-5);
    CHECK_CLOSE_VEC(other.row_max, to_double(one.row_max), 1e-6, 1e-5);
    CHECK_CLOSE_VEC(other.row_sum, to_double(one.row_sum), 1e-6, 1e-5);
    CHECK_CLOSE_VEC(other.row_energy, to_double(one.row_energy), 1e-6, 1e-5);
  }
}

TEST_CASE("fp16 K/V caches match the twin within the fp16 bound") {
  double worst = 0;
  size_t item = 0;
  for (const AttentionPath& ap : {path(1, 1, 0, true), path(0, 0, 5, true), path(0, 1, 0, true)})
    for (const Shape& s : kShapes) {
      if (s.N > 1000) continue;  // one long case below is enough for fp16
      if (!shard_takes(item++)) continue;
      CAPTURE(describe(ap));
      const AttentionParams p = model("M2", s.H, s.D);
      check_model(p, s.B, s.N, s.times, s.chunk, 11, ap, kTolF16);
      // The error actually measured, for the note and the docs.
      worst = std::max(worst, worst_relative_error(p, s, ap));
    }
  if (shard_takes(item++)) check_model(model("M1", 1, 64), 1, 2053, 1, 2053, 11, path(0, 1, 0, true), kTolF16);
  MESSAGE("fp16 K/V: worst |gpu - twin| / (1 + |twin|) over the shapes = " << worst << " (shard " << shard_name() << ")");
  CHECK(worst > 0.0);  // the f16 path really rounds (an fp32 cache would agree to ~1e-6)
  CHECK(worst <= kTolF16);
}

TEST_CASE("probes read the row statistics of split-k and fp16 runs") {
  for (const AttentionPath& ap : {path(0, 1, 3, false), path(1, 0, 2, true)}) {
    CAPTURE(describe(ap));
    check_probe_after(ap, 1, {0u, 1u}, ap.kv_f16 ? kTolF16 : 1e-4);
  }
}

TEST_CASE("the SDPA yardstick on split-k and fp16 caches") {
  const int B = 1, H = 3, D = 16, N = 130;
  for (const AttentionPath& ap : {path(0, 0, 6, false), path(1, 0, 0, true)}) {
    CAPTURE(describe(ap));
    gpu::Context& g = ap.gpu();
    auto cr = ops::AttentionCache::create(g, B, H, D, N, "sdpa cache", 0, ap.kv_f16);
    REQUIRE(cr.ok());
    ops::AttentionCache cache = cr.take();
    // Fill q with fp32 values and k, v with values exactly representable in fp16 (multiples of
    // 1/64 in [-1, 1]), so both caches hold the same numbers and the twin sees them exactly.
    std::vector<float> q = random_floats((size_t)B * H * N * D * 2, 3), k = random_floats(q.size(), 4),
                       v = random_floats(q.size(), 5);
    for (auto* x : {&k, &v})
      for (float& e : *x) e = std::round(e * 64.f) / 64.f;
    auto upload_kv = [&](gpu::Buffer& dst, const std::vector<float>& x) {
      if (!ap.kv_f16) {
        REQUIRE(g.upload(dst, x.data(), x.size() * 4).ok());
        return;
      }
      std::vector<uint32_t> packed(x.size() / 2);
      auto half = [](float f) {  // exact for these values: multiples of 1/64 in [-1, 1]
        if (f == 0.f) return (uint32_t)(std::signbit(f) ? 0x8000 : 0);
        int e;
        const float m = std::frexp(std::fabs(f), &e);  // f = m 2^e, m in [0.5, 1)
        const uint32_t bits = ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)std::lround((m * 2 - 1) * 1024) & 0x3ff);
        return bits | (f < 0 ? 0x8000u : 0u);
      };
      for (size_t i = 0; i < packed.size(); ++i) packed[i] = half(x[2 * i]) | (half(x[2 * i + 1]) << 16);
      REQUIRE(g.upload(dst, packed.data(), packed.size() * 4).ok());
    };
    REQUIRE(g.upload(cache.q, q.data(), q.size() * 4).ok());
    upload_kv(cache.k, k);
    upload_kv(cache.v, v);
    // Decode the last 3 positions one at a time after a prefill of the rest, against the twin from the
    // same cache contents.
    const std::vector<float> got = run_sdpa_prefill_then_decode(g, cache, H, D, N);
    const std::vector<double> want = sdpa_causal_twin(q, k, v, H, D, N);
    CHECK_CLOSE_VEC(got, want, 2e-5, 2e-4);
  }
}

TEST_CASE("the tiling is data: chosen from the device and the shape, with its reason") {
  gpu::Capabilities gpu_caps = fake_gpu_caps();
  gpu::Capabilities cpu_caps = gpu_caps;
  cpu_caps.device_type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu_caps.subgroup_size = 8;
  // The v2 decode path (key tiles in shared memory, 512 workgroups): the v3 one has a case of its own.
  KernelOptions none;
  none.attention_decode_registers = 0;
  none.attention_split_cores = 0;
  // Decode at long context on a GPU: the keys split until about 512 workgroups run.
  auto t = ops::choose_attention_tiling(gpu_caps, none, 1, 32, 8, 65536);
  CHECK(t.splits == 64);
  CHECK(t.groups_x == 64);
  CHECK(!t.direct_kv);
  CHECK(t.lag_table);
  CHECK(t.why.find("split-k") != std::string::npos);
  // Decode key tiles come in whole rounds of the row's threads (thread s takes keys s, s + S, ...),
  // none idle where a round fits: at D = 32, 32 threads per row and 32-key tiles (the 64-key round
  // of 64 threads does not fit the 32 KiB cap with rows padded to D | 1).
  CHECK(t.threads_per_row == 32);
  CHECK(t.keys_per_tile == 32);
  for (uint32_t D : {4u, 8u, 12u, 20u, 32u, 40u, 64u, 80u, 128u}) {
    CAPTURE(D);
    const auto u = ops::choose_attention_tiling(gpu_caps, none, 1, D, 8, 65536);
    CHECK(u.workgroup <= 128);
    CHECK(u.workgroup == u.rows_per_group * u.threads_per_row);
    if (u.keys_per_tile >= gpu_caps.subgroup_size) CHECK(u.keys_per_tile % u.threads_per_row == 0);
  }
  // Short context: at least 256 keys per split.
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 1, 32, 8, 1024).splits == 4);
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 1, 32, 8, 300).splits == 1);
  // Prefill (many rows) and a wide batch: no split.
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 512, 32, 8, 65536).splits == 1);
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 1, 32, 64 * 8, 65536).splits == 1);
  // CPU devices keep their path: keys from the cache, no split.
  // CPU devices: at most kCpuKeysPerThread keys per thread (lavapipe caps the loop iterations of an
  // invocation; a 34,000-key prefill on one thread per row went wrong from row 32,033).
  for (uint32_t cap : {4096u, 16384u, 65536u, 1u << 20})
    for (uint32_t rows : {1u, 64u, 4096u}) {
      const auto c = ops::choose_attention_tiling(cpu_caps, none, rows, 32, 8, cap);
      CHECK((cap + c.threads_per_row - 1) / c.threads_per_row <= ops::kCpuKeysPerThread);
      CHECK(c.workgroup == c.rows_per_group * c.threads_per_row);
    }
  CHECK(ops::choose_attention_tiling(cpu_caps, none, 4096, 32, 8, 4096).threads_per_row == 1);  // short: unchanged
  t = ops::choose_attention_tiling(cpu_caps, none, 1, 32, 8, 65536);
  CHECK(t.splits == 1);
  CHECK(t.direct_kv);
  CHECK(t.why.rfind("CPU device", 0) == 0);
  // Overrides win, within the cache's partial-state budget.
  KernelOptions forced;
  forced.attention_split_k = 9;
  forced.attention_lag_table = 0;
  t = ops::choose_attention_tiling(cpu_caps, forced, 2, 32, 8, 64);
  CHECK(t.splits == 9);
  CHECK(!t.lag_table);
  forced.attention_split_k = 1000;
  CHECK(ops::choose_attention_tiling(cpu_caps, forced, 1, 32, 8, 64).splits == 64);
  CHECK(ops::choose_attention_tiling(cpu_caps, forced, 8, 32, 8, 64).splits == 1);  // more rows than split-k takes
}

TEST_CASE("the direct walk's merge is chosen as data: subgroup operations where whole subgroups hold a row's lanes") {
  gpu::Capabilities caps = fake_gpu_caps(VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                         VK_SUBGROUP_FEATURE_CLUSTERED_BIT);
  // GPU decode steps with key tiles in shared memory (attention_decode_registers 0: the v2 path).
  KernelOptions none;
  none.attention_decode_registers = 0;
  // A decode step: S threads of one row, at most one 32-lane subgroup of them (64 do not fit one).
  auto t = ops::choose_attention_tiling(caps, none, 1, 32, 8, 65536);
  REQUIRE(!t.tile);
  CHECK(t.threads_per_row == 32);
  CHECK(t.subgroup_reduce);
  CHECK(!t.subgroup_shuffle);
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention_sg");
  CHECK(ops::attention_kernel_name("sdpa", t, true) == "sdpa_sg_kv16");
  CHECK(t.why.find("merged by clustered subgroup reductions") != std::string::npos);
  // Four rows of 16 lanes (a 3-row call), split-k kept.
  t = ops::choose_attention_tiling(caps, none, 3, 64, 8, 65536);
  CHECK(t.threads_per_row == 16);
  CHECK(t.subgroup_reduce);
  CHECK(t.splits > 1);
  // Shuffles without clustered operations (lavapipe, MoltenVK): the butterflies.
  gpu::Capabilities sx = caps;
  sx.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  t = ops::choose_attention_tiling(sx, none, 1, 32, 8, 65536);
  CHECK(t.subgroup_reduce);
  CHECK(t.subgroup_shuffle);
  CHECK(ops::attention_kernel_name("rfa_attention", t, true) == "rfa_attention_sx_kv16");
  CHECK(t.why.find("merged by subgroup shuffles") != std::string::npos);
  // Neither (the Android baseline: basic only): the shared-memory merge, today's kernel.
  gpu::Capabilities basic = caps;
  basic.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT;
  t = ops::choose_attention_tiling(basic, none, 1, 32, 8, 65536);
  CHECK(!t.subgroup_reduce);
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention");
  CHECK(t.why.find("merged by shared memory") != std::string::npos);
  // CPU devices (lavapipe: 8-lane subgroups, shuffles): one subgroup of 8 lanes per decode row; at
  // a context that needs more threads per row than a subgroup has, shared memory again.
  gpu::Capabilities cpu = sx;
  cpu.device_type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu.subgroup_size = 8;
  // One thread per row (prefill) merges nothing: the plain kernel.
  t = ops::choose_attention_tiling(cpu, none, 4096, 32, 8, 4096);
  REQUIRE(!t.tile);
  CHECK(t.threads_per_row == 1);
  CHECK(!t.subgroup_reduce);
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention");
  t = ops::choose_attention_tiling(cpu, none, 1, 32, 8, 4096);
  CHECK(t.direct_kv);
  CHECK(t.workgroup == 8);
  CHECK(t.subgroup_shuffle);
  CHECK(ops::attention_kernel_name("sdpa", t, false) == "sdpa_sx");
  t = ops::choose_attention_tiling(cpu, none, 1, 32, 8, 1u << 20);
  CHECK(t.threads_per_row > 8);
  CHECK(!t.subgroup_reduce);
  // Row groups: a power of two, within one subgroup, the workgroup whole subgroups.
  CHECK(ops::row_subgroup_reduce(caps, 64, 64) == 0);
  CHECK(ops::row_subgroup_reduce(caps, 64, 32) == 1);
  CHECK(ops::row_subgroup_reduce(caps, 48, 8) == 0);
  CHECK(ops::row_subgroup_reduce(caps, 96, 6) == 0);
  CHECK(ops::row_subgroup_reduce(sx, 64, 16) == 2);
}

TEST_CASE("GPU decode steps (v3): K/V straight into registers, four subgroups a row, split by compute units") {
  gpu::Capabilities caps = fake_gpu_caps(VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                         VK_SUBGROUP_FEATURE_CLUSTERED_BIT);
  caps.compute_units = 132;  // an H100's SMs
  const KernelOptions v3;
  auto t = ops::choose_attention_tiling(caps, v3, 1, 32, 8, 65536);
  CHECK(t.direct_kv);  // no staging: no barrier inside the walk
  CHECK(t.workgroup == 128);
  CHECK(t.threads_per_row == 128);
  CHECK(!t.subgroup_reduce);  // 128 lanes are more than one subgroup: merged once, in shared memory
  // Two workgroups per SM: 264 over B x H = 8 rows -> 33 splits (the v2 target of 512: 64).
  CHECK(t.splits == 33);
  CHECK(t.why.find("two workgroups per compute unit (132 units)") != std::string::npos);
  KernelOptions v2 = v3;
  v2.attention_split_cores = 0;
  CHECK(ops::choose_attention_tiling(caps, v2, 1, 32, 8, 65536).splits == 64);
  // Without the device's count: a class default (64 for a discrete GPU).
  caps.compute_units = 0;
  t = ops::choose_attention_tiling(caps, v3, 1, 32, 8, 65536);
  CHECK(t.splits == 16);
  CHECK(t.why.find("class default") != std::string::npos);
  // Forced staging, and prefill-sized calls, keep the tiles; CPU devices their own decode path.
  KernelOptions staged = v3;
  staged.attention_direct_kv = 0;
  CHECK(!ops::choose_attention_tiling(caps, staged, 1, 32, 8, 65536).direct_kv);
  CHECK(!ops::choose_attention_tiling(caps, v3, 64, 32, 8, 65536).direct_kv);
  gpu::Capabilities cpu = caps;
  cpu.device_type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu.subgroup_size = 8;
  CHECK(ops::choose_attention_tiling(cpu, v3, 1, 32, 8, 4096).workgroup == 8);
}

TEST_CASE("subgroup-lane kernels only where full subgroups of a required size can be asked for") {
  // An Intel-like GPU: reports 32 lanes but may run a compute shader 8 or 16 wide. Without subgroup
  // size control (or without compute among requiredSubgroupSizeStages, as MoltenVK's M1) the lane
  // numbering gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID could skip rows or run
  // past arrays: every path is the shared-memory one.
  gpu::Capabilities intel = fake_gpu_caps(VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                          VK_SUBGROUP_FEATURE_CLUSTERED_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  intel.device_type = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  intel.min_subgroup_size = 8;
  intel.max_subgroup_size = 32;
  intel.max_workgroup_subgroups = 56;
  intel.subgroup_size_control = false;
  intel.shader_float16 = true;
  const KernelOptions none;
  CHECK(gpu::subgroup_layout_size(intel, 128) == 0);
  for (uint32_t rows : {1u, 3u, 512u}) {
    const auto t = ops::choose_attention_tiling(intel, none, rows, 32, 8, 65536);
    CAPTURE(rows);
    CHECK(!t.subgroup_reduce);
    const std::string name = ops::attention_kernel_name("rfa_attention", t, false);
    CHECK(name.find("_sg") == std::string::npos);
    CHECK(name.find("_sx") == std::string::npos);
  }
  KernelOptions cm;
  cm.attention_tile = 1;
  cm.attention_coopmat = 2;  // the emulated matrices number lanes too
  CHECK(!ops::choose_attention_tiling(intel, cm, 512, 32, 8, 4096).coopmat);
  // With it: the default 32 lanes required, full; the workgroup whole subgroups of them.
  intel.subgroup_size_control = true;
  CHECK(gpu::subgroup_layout_size(intel, 128) == 32);
  CHECK(gpu::subgroup_layout_size(intel, 48) == 0);        // not whole 32-lane subgroups
  CHECK(gpu::subgroup_layout_size(intel, 32 * 57) == 0);   // more than maxComputeWorkgroupSubgroups
  auto t = ops::choose_attention_tiling(intel, none, 512, 32, 8, 4096);
  CHECK(t.subgroup_reduce);
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention_tile_sg");
  KernelOptions staged;  // the v2 decode path: one subgroup of a row's threads, merged in it
  staged.attention_decode_registers = 0;
  t = ops::choose_attention_tiling(intel, staged, 1, 32, 8, 65536);
  CHECK(t.subgroup_reduce);
  CHECK(t.threads_per_row <= 32);
  // A default outside the range the driver lets a pipeline require: the nearest size it allows.
  gpu::Capabilities odd = intel;
  odd.subgroup_size = 64;
  CHECK(gpu::subgroup_layout_size(odd, 128) == 32);
  odd.max_subgroup_size = 0;  // not reported: the default is the one size
  odd.min_subgroup_size = 0;
  CHECK(gpu::subgroup_layout_size(odd, 128) == 64);
  CHECK(gpu::subgroup_layout_size(odd, 96) == 0);
}

namespace {
// A windowed stream on path `ap`: chunks of `chunk` positions through a ring of window + chunk - 1
// slots, outputs and log-partitions against the twin's banded causal mask.
void check_window_on(const AttentionPath& ap, const AttentionParams& p, int B, int N, int window, int chunk) {
  CAPTURE(N);
  CAPTURE(window);
  CAPTURE(chunk);
  const Inputs in = make_inputs(p, B, N, 23, 1);
  const int rows = B * N;
  ref::AttentionOutputs r;
  ref::AttentionOptions opt;
  opt.window = window;
  REQUIRE(ref::attention(p, B, N, ref::split_complex(to_double(in.q), rows, p.heads, p.dim),
                         ref::split_complex(to_double(in.k), rows, p.heads, p.dim),
                         ref::split_complex(to_double(in.v), rows, p.heads, p.dim), in.t, &r, opt)
              .ok());
  const RingRun run = run_ring(p, in, window, chunk, ap.kv_f16, ap.gpu());
  const double tol = ap.kv_f16 ? kTolF16 : kTol;
  CHECK_CLOSE_VEC(run.out, ref::pack_complex(r.est, rows, p.heads, p.dim), tol, tol);
  CHECK_CLOSE_VEC(run.lse, r.row_lse, tol * 10, tol);
}
}  // namespace

TEST_CASE("the direct walk's merge matches the twin: by subgroup operations and through shared memory") {
  // lavapipe (8-lane subgroups, shuffles, no clustered operations) merges a decode row's 8 lanes
  // by shuffle-xor butterflies (*_sx); under the Android baseline profile (basic subgroup
  // operations only) the same device merges through shared memory. Decode steps (one row, S = 8)
  // at D = 8, 20, 32, 64, 128 and 3-row calls (4 rows of 2 lanes), causal and windowed, the gate
  // and fp16 caches on some, split-k once (the partial states the merge hands to the reduce), and
  // the SDPA yardstick.
  int k = 0, runs = 0, own_runs = 0, ran_subgroup = 0;
  std::vector<std::string> clustered;  // the *_sg kernels that ran (devices with clustered operations)
  for (const char* profile : {"", "android-baseline-2022"})
    for (int D : {8, 20, 32, 64, 128}) {
      const bool kv16 = k % 2 == 1, gate = k % 3 != 2;  // fp32 and fp16 caches, the gate, across the D
      if (!shard_takes((size_t)k++)) continue;
      AttentionPath ap = path(-1, 1, -1, kv16);  // the device's own choices
      ap.device_profile = profile;
      CAPTURE(profile);
      CAPTURE(describe(ap));
      CAPTURE(D);
      CAPTURE(gate);
      const gpu::Capabilities& caps = ap.gpu().caps();
      const double tol = kv16 ? kTolF16 : kTol;
      const AttentionParams p = model(gate ? "M2.7" : "M2", 2, D);
      for (int chunk : {1, 3}) {
        if (chunk == 3 && D != 20 && D != 64) continue;
        CAPTURE(chunk);
        const int N = 24;
        const auto t = ops::choose_attention_tiling(caps, ap.kernels, (uint32_t)chunk, (uint32_t)D, 2, (uint32_t)N, gate);
        REQUIRE(!t.tile);
        if (*profile) CHECK(!t.subgroup_reduce);
        else CHECK((int)t.subgroup_reduce + (int)t.subgroup_shuffle ==
                   (t.threads_per_row > 1 ? ops::row_subgroup_reduce(caps, t.workgroup, t.threads_per_row) : 0));
        ++runs;
        own_runs += *profile ? 0 : 1;
        ran_subgroup += t.subgroup_reduce ? 1 : 0;
        if (t.subgroup_reduce && !t.subgroup_shuffle) {
          const std::string name = ops::attention_kernel_name("rfa_attention", t, kv16);
          CHECK(name.find("_sg") != std::string::npos);
          clustered.push_back(name);
        }
        check_model(p, 1, N, 1, chunk, 11, ap, tol);
      }
      check_window_on(ap, p, 1, 30, 11, 1);  // decode steps through a ring that wraps
      if (D == 32) {  // split-k: the merged partial states handed to the reduce pass
        AttentionPath split = ap;
        split.kernels.attention_split_k = 3;
        check_model(p, 2, 20, 1, 1, 11, split, tol);
      }
      if (kv16) continue;
      check_sdpa_yardstick(ap, 2, D, 12);  // the SDPA yardstick: a 9-row prefill, then 3 decode steps
    }
  // A device with subgroup shuffles or clustered operations ran the subgroup kernels (lavapipe: *_sx).
  const gpu::Capabilities& caps = path(-1, 1, -1, false).gpu().caps();
  if ((caps.subgroup_ops & (VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT)) && caps.subgroup_size >= 2 &&
      caps.subgroup_size_control && own_runs > 0)
    CHECK(ran_subgroup > 0);
  // Clustered operations (Mesa 26's lavapipe, GPUs): the *_sg kernels, by name.
  const VkSubgroupFeatureFlags cl = VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT;
  if ((caps.subgroup_ops & cl) == cl && caps.subgroup_size_control && own_runs > 0) CHECK(!clustered.empty());
  std::string names;
  for (const std::string& n : clustered) names += (names.empty() ? "" : ", ") + n;
  MESSAGE("the direct walk's merge by subgroup operations on " << ran_subgroup << " of " << runs << " runs"
          << (clustered.empty() ? std::string() : "; clustered: " + names));
}

TEST_CASE("row diagnostics over long rows at D = 64 (every key of a row in one thread)") {
  // The row-diagnostics probe walks all keys of a row in one invocation: at D = 64 and 1100 keys
  // that is 70,400 steps of the per-key cross-term loop, past the ~65,535 iterations a CPU driver
  // lets one loop run (tests/test_attention_paths.cpp found the same in the fused kernel).
  const AttentionParams p = model("M2", 1, 64);
  const int N = 1100;
  const Inputs in = make_inputs(p, 1, N, 21, 0);
  const ref::AttentionOutputs r = twin(p, in, true);
  Fixture f(p, in);
  f.run(N);
  const std::vector<double> thr = {0.0, 3.0, 10.0, 40.0};
  ref::RowDiagnostics rd;
  REQUIRE(ref::row_diagnostics(p, 1, N, in.t, r, thr, &rd).ok());
  const uint32_t r0 = N - 8, r1 = N;
  const float tf[4] = {0.f, 3.f, 10.f, 40.f};
  gpu::Buffer d = f.up(std::vector<float>((size_t)(r1 - r0) * 8));
  gpu::Recorder rec(f.g);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, 0, r0, r1, tf, d).ok());
  REQUIRE(rec.submit_and_wait().ok());
  const auto got = f.down(d, (size_t)(r1 - r0) * 8);
  std::vector<float> gv;
  std::vector<double> rv;
  for (uint32_t i = r0; i < r1; ++i) {
    gv.push_back(got[(size_t)(i - r0) * 8 + 0]);  // entropy
    rv.push_back(rd.entropy[i]);
    gv.push_back(got[(size_t)(i - r0) * 8 + 1]);  // log-partition
    rv.push_back(rd.log_partition[i]);
  }
  CHECK_CLOSE_VEC(gv, rv, 1e-4, 1e-4);
}

namespace {
// rfa_log2_1p of shaders/common/rfa_lag_kernels.glsl, read from the shader source (its range and
// its coefficients, highest degree first) and evaluated as the GPU does: fp32 Horner with fma,
// log2(1 + x) outside the range. Whatever edits the shader, this test reads the edited formula.
struct Log2_1p {
  float lo = 0, hi = 0;
  std::vector<float> coef;  // highest degree first
  float operator()(float x) const {
    if (x >= lo && x <= hi) {
      float s = coef[0];
      for (size_t i = 1; i < coef.size(); ++i) s = std::fmaf(s, x, coef[i]);
      return s * x;
    }
    return std::log2(1.0f + x);
  }
};
Log2_1p read_log2_1p() {
  Log2_1p f;
  std::ifstream in(std::string(RFA_SOURCE_DIR) + "/shaders/common/rfa_lag_kernels.glsl");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string src = ss.str();
  const size_t a = src.find("float rfa_log2_1p(float x) {");
  REQUIRE(a != std::string::npos);
  const size_t b = src.find("\n}\n", a);
  const std::string body = src.substr(a, b - a);
  REQUIRE(std::sscanf(body.c_str() + body.find("if (x >= "), "if (x >= %f && x <= %f)", &f.lo, &f.hi) == 2);
  size_t p = body.find("float s = ");
  REQUIRE(p != std::string::npos);
  f.coef.push_back(std::strtof(body.c_str() + p + 10, nullptr));
  while ((p = body.find("fma(s, x, ", p + 1)) != std::string::npos) f.coef.push_back(std::strtof(body.c_str() + p + 10, nullptr));
  return f;
}
}  // namespace

TEST_CASE("log(1 + x) of the fused kernels: relative 2^-20 without a division, from 1e-8 to 1e3") {
  const Log2_1p f = read_log2_1p();
  REQUIRE(f.coef.size() >= 6);
  CHECK(f.lo == -0.25f);
  const double ln2 = std::log(2.0);
  double worst = 0, at = 0;
  auto check = [&](float x) {
    const double want = std::log1p((double)x) / ln2;
    const double rel = std::fabs((double)f(x) - want) / std::fabs(want);
    // The natural form the probes use, RFA_LN2 * log2(1 + x): one more rounding.
    const double nat = std::fabs((double)(0.69314718055994531f * f(x)) - std::log1p((double)x)) / std::fabs(std::log1p((double)x));
    if (std::max(rel, nat) > worst) worst = std::max(rel, nat), at = x;
  };
  for (int k = 0; k <= 220000; ++k) check((float)std::pow(10.0, -8.0 + 11.0 * k / 220000.0));  // [1e-8, 1e3], log grid
  for (int k = 0; k <= 200000; ++k) check((float)(-0.25 + 1.0 * k / 200000.0));               // the polynomial's range
  for (float x : {f.lo, f.hi, std::nextafter(f.hi, 1.0f), std::nextafter(f.lo, -1.0f), -1e-8f, 1e-30f, 3e3f})
    if (x != 0.0f) check(x);
  MESSAGE("rfa_log2_1p: worst relative error " << worst << " (2^" << std::log2(worst) << ") at x = " << at);
  CHECK(worst <= std::ldexp(1.0, -20));
}
