// Any head dim D (complex dims per head), not only powers of two: the fused RFA kernel on every
// path (keys read from the cache or staged in shared-memory tiles, the lag table on and off,
// split-k decode, fp16 K/V caches, the cooperative tile with fp32 or fp16 products and with
// emulated cooperative matrices), every variant switch, the probes over the row statistics each
// path writes, the row diagnostics and the tomography rows and matrix, and the SDPA yardstick,
// against the double-precision twin on off-tile shapes at D in {12, 20, 24, 40, 48, 80, 96, 128}
// and two odd dims (7, 3). Plus the choosers' invariants for every D up to kMaxHeadDim and the
// limit itself. (AFA, RT-RFA, accumulated phases and rfa-run at these D: their own suites.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "gpu/capabilities.hpp"
#include "gpu/shader_registry.hpp"
#include "model/limits.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/rfa_tomography.hpp"
#include "ops/sdpa.hpp"
#include "reference/attention_ref.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// The head dims of the sweep: every one the kernels used to refuse, the largest, and two odd ones.
const int kDims[] = {12, 20, 24, 40, 48, 80, 96, 128, 7, 3};

// fp16 products and cooperative matrices: four roundings where the fp16 cache has one
// (tests/test_attention_tile.cpp states the bound).
constexpr double kTolF16Math = 4 * kTolF16;

struct NamedPath {
  AttentionPath path;
  double tol;
};

// Every path forced through KernelOptions; the fp16-product and emulated cooperative-matrix tiles
// where the device can run them (said with a message where it cannot).
std::vector<NamedPath> all_paths() {
  std::vector<NamedPath> v = {
      {path(1, 0, 0, false), kTol},     // keys read from the cache, every pair's terms computed
      {path(0, 1, 0, false), kTol},     // shared-memory key tiles, the lag table
      {path(1, 1, 3, false), kTol},     // split-k in 3 (decode steps), keys from the cache
      {path(0, 0, 5, true), kTolF16},   // split-k in 5, tiles, fp16 K/V
      {tile_path(1, false), kTol},      // the cooperative tile
      {tile_path(0, true), kTolF16},    // the tile over fp16 K/V, computed terms
  };
  const AttentionPath f16 = tile_path(1, false, 1);
  if (f16.gpu().caps().shader_float16) v.push_back({f16, kTolF16Math});
  else MESSAGE("fp16-product tile skipped: the device has no shaderFloat16");
  const AttentionPath cm = tile_path(1, false, 0, 2);
  if (ops::choose_attention_tiling(cm.gpu().caps(), cm.kernels, 100, 32, 8, 4096).coopmat) v.push_back({cm, kTolF16Math});
  else MESSAGE("emulated cooperative-matrix tile skipped: the device lacks shaderFloat16 or subgroup shuffles");
  // The device's own matrices (Mesa 26's lavapipe: VK_KHR_cooperative_matrix 8x8x8), through shared
  // memory (the *_tile_ck kernels) and per element of the accumulators (VK_NV_cooperative_matrix2,
  // the *_tile_pe kernels) where the device has it.
  for (int per_element : {0, 1}) {
    AttentionPath real = tile_path(1, false, 0, 1);
    real.kernels.attention_coopmat_per_element = per_element;
    const auto rt = ops::choose_attention_tiling(real.gpu().caps(), real.kernels, 100, 32, 8, 4096);
    if (rt.coopmat && rt.coopmat_pe == (per_element == 1)) v.push_back({real, kTolF16Math});
    else MESSAGE("cooperative-matrix tile on the device's matrices (per element " << per_element << ") skipped: " << rt.why);
  }
  return v;
}

}  // namespace

TEST_CASE("any head dim: every kernel path and every switch match the twin") {
  const std::vector<NamedPath> paths = all_paths();
  int di = 0;
  size_t item = 0;
  for (int D : kDims) {
    for (size_t pi = 0; pi < paths.size(); ++pi) {
      // D >= 80: half the paths each (alternating, so every path runs at one or two of them): lavapipe
      // compiles such a kernel in 10-40 s, one per switch setting.
      if (D >= 80 && pi % 2 != (size_t)di % 2) continue;
      if (!shard_takes(item++)) continue;
      const AttentionPath& ap = paths[pi].path;
      const double tol = paths[pi].tol;
      const int mask = (int)(pi + (size_t)di) % 8;  // every switch setting at every D and on every path
      const AttentionParams p = switch_variant(mask, 2, D);
      const bool split = ap.kernels.attention_split_k > 1, causal = p.sw.causal;
      // Split-k paths: decode steps (B = 2); the others: prefill in calls of 13 (later calls read
      // earlier keys through the cache; 13 rows make two threads share a row on the CPU path).
      // Non-causal layers: one call over every position (a non-causal prefix is not the twin's).
      const int B = split ? 2 : 1, N = split ? (causal ? 9 : 3) : 37, chunk = causal ? (split ? 1 : 13) : N;
      CAPTURE(D);
      CAPTURE(describe(ap));
      CAPTURE(mask);
      check_model(p, B, N, mask % 2, chunk, 11, ap, tol);
      // The path that ran is the one asked for (the tiling is a pure function of the same inputs).
      const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, (uint32_t)chunk, (uint32_t)D,
                                                  (uint32_t)(B * p.heads), (uint32_t)N, p.sw.gate);
      // A forced tile that no key tile fits (D >= 80 in the Android baseline's 16 KiB of shared
      // memory) falls back to the direct path and says why; otherwise the tile is what ran.
      if (ap.kernels.attention_tile == 1 && !t.tile)
        CHECK(t.why.find("shared memory") != std::string::npos);
      else
        CHECK(t.tile == (ap.kernels.attention_tile == 1));
      // Cooperative matrices where their tile fits (at D = 128 it needs 34.5 KiB, more than lavapipe's
      // 32 KiB: the scalar tile runs instead, and says why).
      if (ap.kernels.attention_coopmat >= 1)
        CHECK((t.coopmat || t.why.find("no cooperative-matrix tile fits") != std::string::npos));
      if (ap.kernels.attention_f16_math == 1) CHECK(t.f16_math);
      if (split) CHECK(t.splits == (uint32_t)ap.kernels.attention_split_k);
      if (t.tile) {
        CHECK(D % t.threads_per_row == 0);
        CHECK(t.shared_bytes <= ap.gpu().caps().max_shared_memory);
      }
    }
    ++di;
  }
}

TEST_CASE("any head dim: probes read the row statistics every path writes") {
  int k = 0;
  for (int D : {12, 40, 128, 7})
    for (const AttentionPath& ap : {path(1, 0, 2, false), path(0, 1, 0, true), tile_path(1, false)}) {
      CAPTURE(describe(ap));
      check_probe_after(ap, ap.kernels.attention_split_k > 1 ? 1 : 20, {(uint32_t)(k++ % 2)},
                        ap.kv_f16 ? kTolF16 : 1e-4, D);
    }
}

TEST_CASE("any head dim: row diagnostics and tomography rows and matrix equal the twin") {
  for (int D : {20, 48, 128, 7}) {
    CAPTURE(D);
    const int B = 1, H = 2, N = 41;
    const AttentionParams p = model("M2", H, D, 5);
    const Inputs in = make_inputs(p, B, N, 13, 1);
    const ref::AttentionOutputs r = twin(p, in, true);
    Fixture f(p, in);
    f.run(N);
    const uint32_t h = 1, r0 = 3, r1 = (uint32_t)N, c0 = 2, c1 = (uint32_t)N - 1;
    const uint32_t rows = r1 - r0, cols = c1 - c0;
    const std::vector<double> thr = {0.0, 3.0, 10.0, 40.0};
    const float tf[4] = {0.f, 3.f, 10.f, 40.f};
    ref::RowDiagnostics rd;
    REQUIRE(ref::row_diagnostics(p, B, N, in.t, r, thr, &rd).ok());
    gpu::Buffer diag = f.up(std::vector<float>((size_t)rows * 8, std::nanf("")));
    gpu::Buffer tomo = f.up(std::vector<float>((size_t)rows * ops::kTomographyRowStride, std::nanf("")));
    gpu::Buffer P = f.up(std::vector<float>((size_t)rows * cols, std::nanf("")));
    gpu::Recorder rec(f.g);
    REQUIRE(rec.begin().ok());
    Status s = ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, h, r0, r1, tf, diag);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    s = ops::record_rfa_tomography_rows(f.g, rec, f.w, f.cache, f.ts, 0, h, r0, r1, 1.0f, tomo);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    s = ops::record_rfa_tomography_matrix(f.g, rec, f.w, f.cache, f.ts, 0, h, r0, r1, c0, c1, 1.0f, false, tomo, P);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    REQUIRE(rec.submit_and_wait().ok());
    const auto gd = f.down(diag, (size_t)rows * 8), gt = f.down(tomo, (size_t)rows * ops::kTomographyRowStride),
               gp = f.down(P, (size_t)rows * cols);
    std::vector<float> g_diag, g_tomo, g_p;
    std::vector<double> w_diag, w_tomo, w_p;
    const size_t HD = (size_t)H * D, W = 2 * HD;
    for (uint32_t i = r0; i < r1; ++i) {
      const size_t row = (size_t)h * N + i, x = i - r0;
      for (int c : {0, 1, 2, 3}) g_diag.push_back(gd[x * 8 + (size_t)c]);
      const size_t idx = row;  // RowDiagnostics: [B][H][N]
      for (double v : {rd.entropy[idx], rd.log_partition[idx], rd.max_weight[idx], rd.expected_lag[idx]}) w_diag.push_back(v);
      // Tomography at alpha = 1: the same row's entropy, log Z and max weight of Ahat, its key
      // count, and tau = |q| / sqrt(2D) with |q| the query's norm (no input norm: the raw Q's).
      double q2 = 0;
      for (size_t d = 0; d < (size_t)D; ++d) {
        const double re = in.q[(size_t)i * W + (size_t)h * D + d], im = in.q[(size_t)i * W + HD + (size_t)h * D + d];
        q2 += re * re + im * im;
      }
      const float* t = &gt[x * ops::kTomographyRowStride];
      for (int c : {ops::kTomoEntropy, ops::kTomoLogZ, ops::kTomoMaxWeight, ops::kTomoTau, ops::kTomoKeys})
        g_tomo.push_back(t[c]);
      for (double v : {rd.entropy[idx], rd.log_partition[idx], rd.max_weight[idx], std::sqrt(q2 / (2.0 * D)),
                       (double)(i + 1)})
        w_tomo.push_back(v);
      for (uint32_t j = c0; j < c1; ++j) {
        g_p.push_back(gp[x * cols + (j - c0)]);
        w_p.push_back(r.Ahat[row * N + j]);  // P(1) = Ahat, 0 where masked
      }
    }
    CHECK_CLOSE_VEC(g_diag, w_diag, 1e-4, 1e-4);
    CHECK_CLOSE_VEC(g_tomo, w_tomo, 1e-4, 1e-4);
    CHECK_CLOSE_VEC(g_p, w_p, 1e-5, 1e-4);
  }
}

TEST_CASE("any head dim: the SDPA yardstick on every path") {
  for (int D : {20, 96, 7})
    for (const AttentionPath& ap : {path(1, 0, 0, false), path(0, 0, 3, false), tile_path(0, false)}) {
      CAPTURE(D);
      CAPTURE(describe(ap));
      // A prefill of 42 rows, then 3 decode steps (split-k applies to those), against the twin.
      check_sdpa_yardstick(ap, 2, D, 45);
    }
}

TEST_CASE("any head dim: the choosers' invariants for every D up to the limit") {
  gpu::Capabilities gpu_caps = fake_gpu_caps();
  gpu::Capabilities cpu_caps = gpu_caps;
  cpu_caps.device_type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu_caps.subgroup_size = 8;
  KernelOptions tile;
  tile.attention_tile = 1;
  KernelOptions cm = tile;
  cm.attention_coopmat = 1;
  gpu::Capabilities nv = gpu_caps;
  nv.coopmat_nv = true;
  nv.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;  // the matrices' row statistics
  // An NVIDIA-like device with KHR matrices 16x16x16 and VK_NV_cooperative_matrix2 (the *_tile_pe
  // kernels, when this build has them).
  gpu::Capabilities nv2 = nv;
  nv2.coopmat_nv = false;
  nv2.coopmat_khr_block = 16;
  nv2.coopmat_nv2 = nv2.maintenance4 = true;
  nv2.subgroup_size = 32;
  nv2.subgroup_size_control = true;
  const bool pe_built = gpu::find_shader("rfa_attention_tile_pe") != nullptr;
  int coopmat_tiles = 0, per_element_tiles = 0;
  for (uint32_t shared : {16384u, 32768u, 49152u}) {
    gpu_caps.max_shared_memory = cpu_caps.max_shared_memory = nv.max_shared_memory = nv2.max_shared_memory = shared;
    for (uint32_t D = 1; D <= (uint32_t)kMaxHeadDim; ++D) {
      CAPTURE(shared);
      CAPTURE(D);
      // The threads that merge a row's states take whole rounds of DC components.
      CHECK(D % ops::merge_chunk_for(D) == 0);
      for (uint32_t rows : {1u, 13u, 512u}) {
        const auto t = ops::choose_attention_tiling(cpu_caps, KernelOptions{}, rows, D, 8, 4096);
        CHECK(t.merge_chunk == ops::merge_chunk_for(D));
        CHECK(t.workgroup == t.rows_per_group * t.threads_per_row);
      }
      for (bool gate : {false, true}) {
        CAPTURE(gate);
        for (const auto& [caps, opts] : {std::pair{gpu_caps, tile}, std::pair{nv, cm}, std::pair{nv2, cm}}) {
          const auto t = ops::choose_attention_tiling(caps, opts, 100, D, 8, 4096, gate);
          if (!t.tile) {
            // Refused only where even the smallest tile cannot fit, and said so.
            CHECK(t.why.find("tile refused") != std::string::npos);
            continue;
          }
          CHECK(t.shared_bytes <= shared);
          CHECK(t.shared_bytes == ops::tile_shared_bytes(t.rows_per_group, t.keys_per_tile, D, false, gate, t.coopmat,
                                                         t.subgroup_reduce, t.kv_apart, 16, t.v3.pad, t.coopmat_pe));
          // The per-element form wherever the device and build have it and a tile of it fits.
          if (caps.coopmat_nv2 && pe_built && t.coopmat_pe) {
            ++per_element_tiles;
            CHECK(t.workgroup / caps.subgroup_size == t.rows_per_group / 16);  // one subgroup per row block
            CHECK(t.workgroup >= t.rows_per_group);
          }
          CHECK(D % t.threads_per_row == 0);
          CHECK(t.keys_per_tile % t.threads_per_row == 0);
          const uint32_t nr = t.workgroup / t.threads_per_row;
          CHECK(t.rows_per_group % nr == 0);
          CHECK(t.rows_per_group >= nr);
          if (t.coopmat) {
            ++coopmat_tiles;
            CHECK(t.rows_per_group % 16 == 0);
            CHECK(t.keys_per_tile % 16 == 0);
            CHECK((t.workgroup / nv.subgroup_size) % (t.rows_per_group / 16) == 0);  // Q fragments per subgroup
          }
        }
      }
    }
  }
  CHECK(coopmat_tiles > 0);
  if (pe_built) CHECK(per_element_tiles > 0);
  // Every D the kernels used to refuse gets the tile on a 48 KiB GPU, cooperative matrices too
  // (2D zero-padded to whole 16-wide blocks); at D = 128 on 32 KiB the key tiles shrink below 16.
  gpu_caps.max_shared_memory = nv.max_shared_memory = 49152;
  for (uint32_t D : {12u, 20u, 24u, 40u, 48u, 80u, 96u, 128u}) {
    CAPTURE(D);
    CHECK(ops::choose_attention_tiling(gpu_caps, KernelOptions{}, 512, D, 8, 65536).tile);
    CHECK(ops::choose_attention_tiling(nv, cm, 512, D, 8, 65536).coopmat);
    // The per-element tile at D = 32 on NVIDIA: 4 subgroups of 32 over 64 rows x 64 keys, K and V apart in 48 KiB.
    if (pe_built && D == 40) {
      const auto p32 = ops::choose_attention_tiling(nv2, cm, 512, 32, 8, 65536);
      CHECK(p32.coopmat_pe);
      CHECK(p32.workgroup == 128);
      CHECK(p32.rows_per_group == 64);
      CHECK(p32.keys_per_tile == 64);
      CHECK(p32.kv_apart);
      CHECK(p32.shared_bytes == 49152);
    }
  }
  gpu_caps.max_shared_memory = 32768;
  const auto t128 = ops::choose_attention_tiling(gpu_caps, KernelOptions{}, 512, 128, 8, 65536);
  CHECK(t128.tile);
  CHECK(t128.keys_per_tile == 8);
  CHECK(t128.rows_per_group == 16);
  CHECK(ops::tile_shared_bytes(16, 16, 128, false, false) > 32768);  // why: a 16 x 16 tile does not fit
}

TEST_CASE("head dims past the limit are refused by the op, naming D and the limit") {
  AttentionParams p = model("M2", 1, 2);
  p.dim = kMaxHeadDim + 2;
  p.omega.assign((size_t)p.dim, 0.1);
  auto w = ops::AttentionWeightsGpu::create(test::gpu(), p);
  REQUIRE(!w.ok());
  CHECK(w.status().code() == Code::unsupported);
  CHECK(w.status().message().find("D = " + std::to_string(kMaxHeadDim + 2)) != std::string::npos);
  CHECK(w.status().message().find(std::to_string(kMaxHeadDim)) != std::string::npos);
}
