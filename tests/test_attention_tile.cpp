// The cooperative tile (common/attention_tile.glsl), the GPU path for prefill, against the
// double-precision twin: forced on through KernelOptions for every call size (lavapipe would not
// choose it), on the off-tile shapes, uniform and irregular timestamps, every variant switch, fp32
// and fp16 K/V caches, fp16 products where the device has shaderFloat16, cooperative matrices where
// it has VK_NV_cooperative_matrix (skipped with a message elsewhere); equal to the one-pass kernel
// it replaces; the probes over the row statistics it writes; the choice of tile as data.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "gpu/capabilities.hpp"
#include "gpu/shader_registry.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/sdpa.hpp"
#include "reference/attention_ref.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// fp16 products (f16_math): Q, K and V are rounded to fp16 in the tiles (2^-11 relative each), each
// complex product Re(conj(q_d) k_d) = q.x k.x + q.y k.y is formed in fp16 (two more roundings) and
// each weight p E is rounded once before its fp16 product with V: four roundings where the fp16
// K/V cache has one, so the bound is four times kTolF16, 32 * 2^-11 = 0.016 abs or rel on outputs
// and log-partitions of these unit-scale inputs. Measured worst case: the MESSAGE line of the case.
constexpr double kTolF16Math = 4 * kTolF16;

bool device_has_f16_math(const AttentionPath& ap) { return ap.gpu().caps().shader_float16; }

}  // namespace

TEST_CASE("the cooperative tile matches the twin on off-tile shapes") {
  int k = 0;
  for (const AttentionPath& ap : {tile_path(1, false), tile_path(0, false), tile_path(1, true)})
    for (const Shape& s : kShapes) {
      CAPTURE(describe(ap));
      const char* name = (k % 3 == 0) ? "M2.7" : "M2";  // the gate (energy state) on some
      if (!shard_takes((size_t)k++)) continue;
      const double tol = ap.kv_f16 ? kTolF16 : kTol;
      check_model(model(name, s.H, s.D), s.B, s.N, s.times, s.chunk, 11, ap, tol);
      // The tile was the path that ran (the tiling is a pure function of the same inputs).
      const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, (uint32_t)s.chunk, (uint32_t)s.D,
                                                  (uint32_t)(s.B * s.H), (uint32_t)s.N, (k - 1) % 3 == 0);
      CHECK(t.tile);
    }
}

TEST_CASE("every switch on the cooperative tile") {
  // The scalar tile, and the matrix tiles where the device takes them: emulated (any device with
  // fp16 and subgroups), the device's own through shared memory (*_tile_ck) and per element
  // (*_tile_pe; both on Mesa 26's lavapipe).
  std::vector<AttentionPath> paths = {tile_path(1, false), tile_path(0, true)};
  for (int per_element : {-2, 0, 1}) {
    AttentionPath cm = tile_path(1, per_element == 1, 0, per_element == -2 ? 2 : 1);
    if (per_element >= 0) cm.kernels.attention_coopmat_per_element = per_element;
    const auto t = ops::choose_attention_tiling(cm.gpu().caps(), cm.kernels, 75, 16, 6, 150);
    if (t.coopmat && (per_element < 0 || t.coopmat_pe == (per_element == 1))) paths.push_back(cm);
    else MESSAGE("skipped " << describe(cm) << ": " << t.why);
  }
  size_t item = 0;
  for (const AttentionPath& ap : paths)
    for (int mask = 0; mask < 8; ++mask) {
      if (!shard_takes(item++)) continue;
      const AttentionParams p = switch_variant(mask);
      CAPTURE(describe(ap));
      CAPTURE(mask);
      const double tol = ap.kernels.attention_coopmat >= 1 ? kTolF16Math : ap.kv_f16 ? kTolF16 : kTol;
      // Non-causal layers: one call over every position (a non-causal prefix is not the twin's).
      check_model(p, 2, p.sw.causal ? 75 : 70, mask % 2, p.sw.causal ? 33 : 70, 11, ap, tol);
    }
}

// Each key tile stages the lag-table rows its pairs read (a window found from the first and last
// row and key times); pairs outside it read the table. Integer times that are positions (every
// pair in the window), that jump and step back (pairs outside it), and non-integer times (no
// window): the twin, and the same tile computing every pair's terms.
TEST_CASE("the tile's staged lag-table window") {
  for (const int coopmat : {0, 2})
    for (const int times : {0, 3, 1}) {
      const AttentionParams p = model(times == 3 ? "M2.7" : "M2", 2, 20);
      const AttentionPath ap = tile_path(1, false, 0, coopmat);
      const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, 150, 20, 4, 300, times == 3);
      if (coopmat == 2 && !t.coopmat) {
        MESSAGE("emulated cooperative matrices need shaderFloat16 and subgroups: skipped");
        continue;
      }
      CAPTURE(describe(ap));
      CAPTURE(times);
      check_model(p, 2, 300, times, 150, 11, ap, coopmat ? kTolF16Math : kTol);  // fp16 matrix operands
      const Inputs in = make_inputs(p, 2, 300, 11, times);
      Fixture a(p, in, 0, ap), b(p, in, 0, tile_path(0, false, 0, coopmat));
      const GpuRun ra = a.run(150), rb = b.run(150);
      // The table holds what lag_terms() computes for its lag: a few fp32 ulps of the scale.
      CHECK_CLOSE_VEC(ra.out, to_double(rb.out), 1e-5, 1e-5);
    }
}

TEST_CASE("the tile equals the one-pass kernel it replaces") {
  const AttentionParams p = model("M2.7", 3, 32);
  const Inputs in = make_inputs(p, 2, 300, 5, 1);
  auto run = [&](const AttentionPath& ap) {
    Fixture f(p, in, 0, ap);
    GpuRun r = f.run(100);  // three prefill calls: later calls read earlier keys through the cache
    r.row_max = f.trim(r.row_max);
    r.row_sum = f.trim(r.row_sum);
    r.row_energy = f.trim(r.row_energy);
    return r;
  };
  const GpuRun one = run(path(0, 1, 0, false));
  const GpuRun tile = run(tile_path(1, false));
  // The same fp32 terms summed in another order: agreement to a few fp32 ulps of the scale.
  CHECK_CLOSE_VEC(tile.out, to_double(one.out), 1e-5, 1e-5);
  CHECK_CLOSE_VEC(tile.row_max, to_double(one.row_max), 1e-6, 1e-5);
  CHECK_CLOSE_VEC(tile.row_sum, to_double(one.row_sum), 1e-5, 1e-5);
  CHECK_CLOSE_VEC(tile.row_energy, to_double(one.row_energy), 1e-5, 1e-5);
}

TEST_CASE("fp16 products in the tile match the twin within their bound") {
  const AttentionPath probe = tile_path(1, false, 1);
  if (!device_has_f16_math(probe)) {
    MESSAGE("skipped: the device has no shaderFloat16 (VK_KHR_shader_float16_int8), so the fp16-product tile cannot run");
    return;
  }
  double worst = 0;
  size_t item = 0;
  for (const AttentionPath& ap : {tile_path(1, false, 1), tile_path(0, true, 1)})
    for (const Shape& s : kShapes) {
      if (s.N > 1000) continue;  // the long case below
      if (!shard_takes(item++)) continue;
      CAPTURE(describe(ap));
      CAPTURE(s.N);
      CAPTURE(s.D);
      const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, (uint32_t)s.chunk, (uint32_t)s.D,
                                                  (uint32_t)(s.B * s.H), (uint32_t)s.N, false);
      REQUIRE(t.f16_math);
      const AttentionParams p = model("M2", s.H, s.D);
      const Inputs in = make_inputs(p, s.B, s.N, 11, s.times);
      const ref::AttentionOutputs r = twin(p, in);
      Fixture f(p, in, 0, ap);
      const GpuRun g = f.run(s.chunk);
      const auto want = ref::pack_complex(r.est, s.B * s.N, p.heads, p.dim);
      CHECK_CLOSE_VEC(g.out, want, kTolF16Math, kTolF16Math);
      for (size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::fabs(g.out[i] - want[i]) / (1.0 + std::fabs(want[i])));
    }
  if (shard_takes(item++)) check_model(model("M2.7", 3, 64), 1, 2053, 1, 2053, 11, tile_path(1, false, 1), kTolF16Math);
  MESSAGE("fp16 products: worst |gpu - twin| / (1 + |twin|) over the shapes = " << worst);
  CHECK(worst > 0.0);
  CHECK(worst <= kTolF16Math);
}

namespace {
// The cooperative-matrix tile (coopmat 1: the device's matrices; 2: emulated by subgroup lanes,
// which checks every offset, stride and layout handed to the matrix operations on any device).
// workgroup > 0: the tile's workgroup forced to that many threads (4 subgroups: NVIDIA's shape).
// per_element: KernelOptions::attention_coopmat_per_element (1: the *_tile_pe kernels, whose
// subgroups each own one row block; 0: the *_tile_ck / *_tile_cm kernels).
void check_coopmat_tile(int coopmat, int workgroup = -1, int per_element = 0) {
  double worst = 0;
  int k = 0, multi_block = 0, unfit = 0;
  AttentionPath pa = tile_path(1, false, 0, coopmat), pb = tile_path(0, true, 0, coopmat);
  pa.kernels.attention_tile_workgroup = pb.kernels.attention_tile_workgroup = workgroup;
  pa.kernels.attention_coopmat_per_element = pb.kernels.attention_coopmat_per_element = per_element;
  for (const AttentionPath& ap : {pa, pb})
    for (const Shape& s : kShapes) {
      CAPTURE(describe(ap));
      CAPTURE(s.N);
      CAPTURE(s.D);
      const bool gate = k++ % 2 == 0;
      // The tiling (a pure function of the device and shape, cheap) for every shape, run or not in
      // this shard, so that every shard checks the NVIDIA-like ownership below.
      const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, (uint32_t)s.chunk, (uint32_t)s.D,
                                                  (uint32_t)(s.B * s.H), (uint32_t)s.N, gate);
      REQUIRE(t.coopmat);
      REQUIRE(t.coopmat_emulated == (coopmat == 2));
      // The KHR kernels where the device has the extension and this build compiled them.
      const gpu::Capabilities& caps = ap.gpu().caps();
      CHECK(t.coopmat_khr == (coopmat == 1 && caps.coopmat_khr() && gpu::find_shader("rfa_attention_tile_ck")));
      if (t.coopmat_khr) CHECK(t.coopmat_block == caps.coopmat_khr_block);
      // (A forced workgroup sets the per-element tile's rows, which may not fit the device's shared
      // memory at large D: D = 64 in lavapipe's 32 KiB. The chooser then takes the other tile.)
      if (per_element == 1 && workgroup > 0 && !t.coopmat_pe) {
        ++unfit;
        continue;
      }
      REQUIRE(t.coopmat_pe == (per_element == 1));
      if (t.coopmat_pe) {  // one subgroup per row block, one thread per row at least
        const uint32_t lanes = gpu::subgroup_layout_size(caps, t.workgroup);
        CHECK(t.workgroup / lanes == t.rows_per_group / t.coopmat_block);
        CHECK(t.workgroup >= t.rows_per_group);
      } else if (workgroup > 0) {
        CHECK(t.workgroup == (uint32_t)workgroup);
        // Each subgroup owns a row block's Q fragments and several key blocks and several P V
        // blocks, as on NVIDIA (there a 64 x 64 tile at D = 32; in lavapipe's 32 KiB the tiles
        // are smaller, and the shapes whose tile still gives each subgroup several of both count).
        const uint32_t block = t.coopmat_block, subgroups = t.workgroup / gpu::subgroup_layout_size(caps, t.workgroup);
        const uint32_t row_blocks = t.rows_per_group / block, per_row_block = subgroups / row_blocks;
        const uint32_t key_blocks = t.keys_per_tile / block / std::max<uint32_t>(per_row_block, 1);
        const uint32_t pv_blocks = row_blocks * ((2 * (uint32_t)s.D + block - 1) / block) / subgroups;
        CHECK(subgroups % row_blocks == 0);
        if (key_blocks > 1 && pv_blocks > 1) ++multi_block;
      }
      if (!shard_takes((size_t)k - 1)) continue;
      const AttentionParams p = model(gate ? "M2.7" : "M2", s.H, s.D);
      check_model(p, s.B, s.N, s.times, s.chunk, 11, ap, kTolF16Math);
      worst = std::max(worst, worst_relative_error(p, s, ap));
    }
  MESSAGE(std::string(coopmat == 2 ? "cooperative matrices (emulated)" : "cooperative matrices")
          << ": worst |gpu - twin| / (1 + |twin|) over the shapes = " << worst
          << (workgroup > 0 ? ", " + std::to_string(multi_block) + " shapes with several key and P V blocks a subgroup"
                            : std::string()));
  if (workgroup > 0 && per_element == 0) CHECK(multi_block > 0);
  if (unfit > 0) MESSAGE(unfit << " shapes where the forced workgroup's per-element tile does not fit");
  CHECK(unfit < k);
  CHECK(worst > 0.0);  // fp16 operands really round
  CHECK(worst <= kTolF16Math);
  if (!shard_takes(0)) return;  // (one shard runs the yardstick)
  // The SDPA yardstick on the same tile: its outputs equal the scalar tile's to fp16 accuracy.
  const AttentionParams p = model("M2", 3, 32);
  const Inputs in = make_inputs(p, 1, 150, 4, 0);
  AttentionPath yard = tile_path(0, false, 0, coopmat);
  yard.kernels.attention_coopmat_per_element = per_element;
  Fixture a(p, in, 0, tile_path(0, false)), b(p, in, 0, yard);
  for (Fixture* f : {&a, &b}) f->run(150);  // rotates Q, K, V into the caches
  std::vector<float> outs[2];
  for (int w = 0; w < 2; ++w) {
    Fixture& f = w == 0 ? a : b;
    gpu::Buffer o = f.up(std::vector<float>((size_t)150 * 2 * 3 * 32));
    gpu::Recorder rec(f.g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_sdpa(f.g, rec, f.cache, o, 0, 150, true, 0.f).ok());
    REQUIRE(rec.submit_and_wait().ok());
    outs[w] = f.down(o, (size_t)150 * 2 * 3 * 32);
  }
  CHECK_CLOSE_VEC(outs[1], to_double(outs[0]), kTolF16Math, kTolF16Math);
}
}  // namespace

TEST_CASE("the tile on cooperative matrices matches the twin") {
  AttentionPath probe = tile_path(1, false, 0, 1);
  probe.kernels.attention_coopmat_per_element = 0;  // (the per-element form: the next case)
  const auto t = ops::choose_attention_tiling(probe.gpu().caps(), probe.kernels, 100, 32, 8, 4096);
  if (!t.coopmat) {
    MESSAGE("skipped: " << t.why << " (lavapipe 22 has no matrices; Mesa 26's lavapipe runs the KHR kernels, "
            "*_tile_ck, 8x8x8; the emulated case below runs their layout)");
    return;
  }
  MESSAGE("ran " << ops::attention_kernel_name("rfa_attention", t, false) << ": " << t.why);
  check_coopmat_tile(1, -1, 0);
  // And in NVIDIA's shape: four subgroups, each owning several key and P V blocks.
  check_coopmat_tile(1, (int)(4 * gpu::subgroup_layout_size(probe.gpu().caps(), 128)), 0);
}

TEST_CASE("the tile with pair terms and softmax per element of the matrices matches the twin") {
  AttentionPath probe = tile_path(1, false, 0, 1);
  probe.kernels.attention_coopmat_per_element = 1;
  const auto t = ops::choose_attention_tiling(probe.gpu().caps(), probe.kernels, 100, 32, 8, 4096);
  if (!t.coopmat_pe) {
    MESSAGE("skipped: " << t.why << " (VK_NV_cooperative_matrix2: Mesa 26's lavapipe runs the *_tile_pe kernels)");
    return;
  }
  MESSAGE("ran " << ops::attention_kernel_name("rfa_attention", t, false) << ": " << t.why);
  check_coopmat_tile(1, -1, 1);
  // Four row blocks of the device's lanes (NVIDIA's 4 subgroups of 32 lanes over 64 rows of 16).
  check_coopmat_tile(1, (int)(4 * gpu::subgroup_layout_size(probe.gpu().caps(), 128)), 1);
}

TEST_CASE("the cooperative-matrix tile with emulated matrices matches the twin") {
  const AttentionPath probe = tile_path(1, false, 0, 2);
  const auto t = ops::choose_attention_tiling(probe.gpu().caps(), probe.kernels, 100, 32, 8, 4096);
  if (!t.coopmat) {
    MESSAGE("skipped: " << t.why);
    return;
  }
  check_coopmat_tile(2);
  // NVIDIA's shape (4 subgroups of 32 lanes, each with 4 key blocks and 4 P V blocks of a 64 x 64
  // tile over resident Q fragments): the same 4 subgroups here, of this device's lanes.
  const uint32_t lanes = gpu::subgroup_layout_size(probe.gpu().caps(), 128);
  REQUIRE(lanes >= 4);
  check_coopmat_tile(2, (int)(4 * lanes));
}

TEST_CASE("fp16 p E at the decay's floor: min_exponent -10 and long lags stay inside the fp16 bound") {
  // p E reaches e^-10 = 4.5e-5 (the clamp's floor) times small softmax weights: below fp16's
  // smallest normal (6.1e-5) unscaled. The matrix tile stores it times 2^14 (docs/math.md §9); the
  // fp16-product tile converts it for its fp16 products. Decays fast enough (mu = 0.5) that every
  // pair past lag 20 sits on the floor, over 300 positions, irregular times.
  AttentionParams p = model("M2.7", 2, 32);
  for (HeadParams& hp : p.head) hp.mu = 0.5;
  REQUIRE(p.sw.min_exponent == -10.0);
  const Inputs in = make_inputs(p, 1, 300, 17, 1);
  const ref::AttentionOutputs r = twin(p, in);
  const auto want = ref::pack_complex(r.est, 300, p.heads, p.dim);
  int ran = 0;
  for (const AttentionPath& ap : {tile_path(1, false, 0, 2), tile_path(1, false, 0, 1), tile_path(1, false, 1)}) {
    CAPTURE(describe(ap));
    const auto t = ops::choose_attention_tiling(ap.gpu().caps(), ap.kernels, 60, 32, 2, 300, true);
    if ((ap.kernels.attention_coopmat >= 1 && !t.coopmat) || (ap.kernels.attention_f16_math == 1 && !t.f16_math)) {
      MESSAGE("skipped: " << t.why);
      continue;
    }
    ++ran;
    Fixture f(p, in, 0, ap);
    const GpuRun g = f.run(60);
    CHECK_CLOSE_VEC(g.out, want, kTolF16Math, kTolF16Math);
    // The outputs are small here (sum p E v / sum p with E on the floor): their relative error, for the docs.
    double worst = 0, worst_rel = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(g.out[i] - want[i]) / (1.0 + std::fabs(want[i])));
      if (std::fabs(want[i]) > 1e-6) worst_rel = std::max(worst_rel, std::fabs(g.out[i] - want[i]) / std::fabs(want[i]));
    }
    MESSAGE(describe(ap) << ": worst |gpu - twin| / (1 + |twin|) = " << worst << ", relative to |twin| > 1e-6: "
                         << worst_rel);
  }
  CHECK(ran >= 1);
}

TEST_CASE("probes read the row statistics the tile writes") {
  for (const AttentionPath& ap : {tile_path(1, false), tile_path(0, true)}) {
    CAPTURE(describe(ap));
    check_probe_after(ap, 20, {1u}, ap.kv_f16 ? kTolF16 : 1e-4);
  }
}

TEST_CASE("the tile is chosen as data: GPUs' prefill, sized to shared memory, refused where it cannot run") {
  gpu::Capabilities gpu_caps = fake_gpu_caps();
  gpu::Capabilities cpu_caps = gpu_caps;
  cpu_caps.device_type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  const KernelOptions none;
  // Prefill on a GPU: 64 rows x 32 keys, 128 threads in groups of 8, within shared memory.
  auto t = ops::choose_attention_tiling(gpu_caps, none, 512, 32, 8, 65536);
  CHECK(t.tile);
  CHECK(t.rows_per_group == 64);
  CHECK(t.keys_per_tile == 32);
  CHECK(t.workgroup == 128);
  CHECK(t.threads_per_row == 8);
  CHECK(t.splits == 1);
  CHECK(t.groups_x == 8);
  CHECK(t.shared_bytes == ops::tile_shared_bytes(64, 32, 32, false, false));
  CHECK(t.shared_bytes <= gpu_caps.max_shared_memory);
  CHECK(t.why.find("cooperative tile") != std::string::npos);
  // The gate's energies and D = 64 shrink the tile until it fits.
  for (uint32_t D : {4u, 8u, 16u, 32u, 64u})
    for (bool gate : {false, true}) {
      const auto u = ops::choose_attention_tiling(gpu_caps, none, 100, D, 8, 4096, gate);
      CAPTURE(D);
      CAPTURE(gate);
      CHECK(u.tile);
      CHECK(u.shared_bytes <= gpu_caps.max_shared_memory);
      CHECK(D % u.threads_per_row == 0);
      CHECK(u.keys_per_tile % u.threads_per_row == 0);
      CHECK(u.rows_per_group % (u.workgroup / u.threads_per_row) == 0);
    }
  // The tiles keep the gate's energies in registers: the gate costs no shared memory.
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 100, 32, 8, 4096, true).keys_per_tile == 32);
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 100, 32, 8, 4096, true).shared_bytes ==
        ops::choose_attention_tiling(gpu_caps, none, 100, 32, 8, 4096, false).shared_bytes);
  CHECK(ops::choose_attention_tiling(gpu_caps, none, 100, 64, 8, 4096).rows_per_group == 32);
  // Decode steps keep threads per row and split-k; 8 rows is not yet a tile.
  CHECK(!ops::choose_attention_tiling(gpu_caps, none, 1, 32, 8, 65536).tile);
  CHECK(!ops::choose_attention_tiling(gpu_caps, none, ops::kTileMinRows, 32, 8, 65536).tile);
  CHECK(ops::choose_attention_tiling(gpu_caps, none, ops::kTileMinRows + 1, 32, 8, 65536).tile);
  // Turned off: the shared-memory key tiles of before.
  KernelOptions off;
  off.attention_tile = 0;
  CHECK(!ops::choose_attention_tiling(gpu_caps, off, 512, 32, 8, 65536).tile);
  // CPU devices: never by default; forced, only for a bounded walk.
  CHECK(!ops::choose_attention_tiling(cpu_caps, none, 512, 32, 8, 4096).tile);
  KernelOptions on;
  on.attention_tile = 1;
  CHECK(ops::choose_attention_tiling(cpu_caps, on, 512, 32, 8, 4096).tile);
  t = ops::choose_attention_tiling(cpu_caps, on, 512, 32, 8, ops::kCpuTileKeys + 1);
  CHECK(!t.tile);
  CHECK(t.why.find("tile refused") != std::string::npos);
  // fp16 products: only on request and with shaderFloat16; the reason says which.
  on.attention_f16_math = 1;
  t = ops::choose_attention_tiling(gpu_caps, on, 512, 32, 8, 4096);
  CHECK(t.tile);
  CHECK(!t.f16_math);
  CHECK(t.why.find("shaderFloat16") != std::string::npos);
  gpu_caps.shader_float16 = true;
  t = ops::choose_attention_tiling(gpu_caps, on, 512, 32, 8, 4096);
  CHECK(t.f16_math);
  CHECK(t.shared_bytes == ops::tile_shared_bytes(t.rows_per_group, t.keys_per_tile, 32, true, false, false, false, true,
                                                 16, t.v3.pad));
  CHECK(!ops::choose_attention_tiling(gpu_caps, none, 512, 32, 8, 4096).f16_math);  // off unless asked
  // Cooperative matrices: only on request, on a device that has them, for any D (2D zero-padded to
  // whole 16-wide blocks).
  KernelOptions cm;
  cm.attention_tile = 1;
  cm.attention_coopmat = 1;
  t = ops::choose_attention_tiling(gpu_caps, cm, 512, 32, 8, 4096);
  CHECK(t.tile);
  CHECK(!t.coopmat);
  CHECK(t.why.find("VK_NV_cooperative_matrix") != std::string::npos);
  gpu::Capabilities nv = gpu_caps;
  nv.coopmat_nv = true;
  CHECK(!ops::choose_attention_tiling(nv, none, 512, 32, 8, 4096).coopmat);  // off unless asked
  // The matrices' tile takes its row statistics by subgroup shuffles: without them, the scalar tile.
  t = ops::choose_attention_tiling(nv, cm, 512, 32, 8, 4096);
  CHECK(t.tile);
  CHECK(!t.coopmat);
  nv.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  // 64 rows x 64 keys at D = 32 in NVIDIA's 48 KiB (the cross terms and P V share one array).
  t = ops::choose_attention_tiling(nv, cm, 512, 32, 8, 4096);
  CHECK(t.coopmat);
  CHECK(t.rows_per_group == 64);
  CHECK(t.keys_per_tile == 64);
  CHECK(t.subgroup_shuffle);
  CHECK(t.shared_bytes <= 49152);
  for (uint32_t D : {4u, 8u, 12u, 16u, 32u, 64u})
    for (bool gate : {false, true}) {
      CAPTURE(D);
      CAPTURE(gate);
      const auto u = ops::choose_attention_tiling(nv, cm, 100, D, 8, 4096, gate);
      CHECK(u.coopmat);
      CHECK(u.subgroup_reduce);
      CHECK(u.subgroup_shuffle);
      CHECK(!u.f16_math);
      CHECK(u.rows_per_group % 16 == 0);
      CHECK(u.keys_per_tile % 16 == 0);
      CHECK(u.shared_bytes == ops::tile_shared_bytes(u.rows_per_group, u.keys_per_tile, D, false, gate, true, false,
                                                     true, 16, u.v3.pad));
      CHECK(u.shared_bytes <= nv.max_shared_memory);
      CHECK(ops::attention_kernel_name("rfa_attention", u, true) == "rfa_attention_tile_cm_kv16");
    }
  // A device with little shared memory: smaller tiles (keys below 16 once the rows are at their
  // minimum: D = 64 with the gate's energies on 16 KiB), or none.
  gpu_caps.max_shared_memory = 16384;
  t = ops::choose_attention_tiling(gpu_caps, none, 512, 32, 8, 4096);
  CHECK(t.tile);
  CHECK(t.shared_bytes <= 16384);
  t = ops::choose_attention_tiling(gpu_caps, none, 512, 64, 8, 4096, true);
  CHECK(t.tile);
  CHECK(t.keys_per_tile == 8);
  CHECK(t.shared_bytes <= 16384);
  CHECK(!t.kv_apart);  // K and V tiles in two buffers do not fit: V staged over K
  CHECK(t.shared_bytes ==
        ops::tile_shared_bytes(t.rows_per_group, t.keys_per_tile, 64, false, true, false, false, false, 16, t.v3.pad));
  CHECK(t.why.find("V staged over K") != std::string::npos);
  gpu_caps.max_shared_memory = 8192;
  t = ops::choose_attention_tiling(gpu_caps, none, 512, 64, 8, 4096, true);
  CHECK(!t.tile);
  CHECK(t.why.find("tile refused") != std::string::npos);
}

TEST_CASE("the tile's row reductions are chosen as data: clustered subgroup operations where whole subgroups hold a row group") {
  gpu::Capabilities caps = fake_gpu_caps(VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                         VK_SUBGROUP_FEATURE_CLUSTERED_BIT);
  const KernelOptions none;
  auto t = ops::choose_attention_tiling(caps, none, 512, 32, 8, 4096);
  REQUIRE(t.tile);
  CHECK(t.subgroup_reduce);
  CHECK(t.kv_apart);
  CHECK(t.shared_bytes == ops::tile_shared_bytes(64, 32, 32, false, false, false, true));
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention_tile_sg");
  CHECK(ops::attention_kernel_name("sdpa", t, true) == "sdpa_tile_sg_kv16");
  CHECK(t.why.find("clustered subgroup reductions") != std::string::npos);
  // The shared-memory exchange: S floats a row more (a 64-row, 8-lane tile: 2 KiB).
  CHECK(ops::tile_shared_bytes(64, 32, 32, false, false, false, false) ==
        ops::tile_shared_bytes(64, 32, 32, false, false, false, true) + 64 * 8 * 4 - 4);
  CHECK(!t.subgroup_shuffle);
  // Shuffles without clustered operations (lavapipe, MoltenVK): shuffle-xor butterflies.
  gpu::Capabilities sx = caps;
  sx.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  t = ops::choose_attention_tiling(sx, none, 512, 32, 8, 4096);
  REQUIRE(t.tile);
  CHECK(t.subgroup_reduce);
  CHECK(t.subgroup_shuffle);
  CHECK(ops::attention_kernel_name("rfa_attention", t, true) == "rfa_attention_tile_sx_kv16");
  CHECK(t.why.find("subgroup shuffles") != std::string::npos);
  CHECK(ops::tile_subgroup_reduce(sx, 128, 8) == 2);
  CHECK(ops::tile_subgroup_reduce(caps, 128, 8) == 1);
  for (VkSubgroupFeatureFlags drop : {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, VK_SUBGROUP_FEATURE_CLUSTERED_BIT}) {
    gpu::Capabilities c = caps;
    c.subgroup_ops &= ~drop;  // no shuffles, and no clustered arithmetic (the Android baseline: basic only)
    t = ops::choose_attention_tiling(c, none, 512, 32, 8, 4096);
    REQUIRE(t.tile);
    CHECK(!t.subgroup_reduce);
    CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention_tile");
    CHECK(t.why.find("through shared memory") != std::string::npos);
  }
  // A row group must be one cluster of whole subgroups: subgroups of 4 lanes hold no 8-lane group
  // (D = 32), but do hold D = 12's 4-lane groups.
  gpu::Capabilities narrow = caps;
  narrow.subgroup_size = 4;  // (min and max not reported: 4 is the one size a pipeline can require)
  CHECK(!ops::choose_attention_tiling(narrow, none, 512, 32, 8, 4096).subgroup_reduce);
  CHECK(ops::choose_attention_tiling(narrow, none, 512, 12, 8, 4096).subgroup_reduce);
  CHECK(ops::tile_subgroup_reduce(caps, 48, 8) == 0);  // 48 threads are not whole 32-lane subgroups
  // fp16 products keep the choice; cooperative matrices have no scalar softmax.
  KernelOptions f16;
  f16.attention_f16_math = 1;
  caps.shader_float16 = true;
  t = ops::choose_attention_tiling(caps, f16, 512, 32, 8, 4096);
  CHECK(t.f16_math);
  CHECK(ops::attention_kernel_name("rfa_attention", t, true) == "rfa_attention_tile_f16_sg_kv16");
  KernelOptions cm;
  cm.attention_tile = 1;
  cm.attention_coopmat = 1;
  caps.coopmat_nv = true;
  t = ops::choose_attention_tiling(caps, cm, 512, 32, 8, 4096);
  CHECK(!t.coopmat);  // clustered operations but no shuffles: the scalar tile
  CHECK(t.why.find("subgroup shuffles") != std::string::npos);
  caps.subgroup_ops |= VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  t = ops::choose_attention_tiling(caps, cm, 512, 32, 8, 4096);
  CHECK(t.coopmat);
  CHECK(t.subgroup_shuffle);  // the kernels are built with RFA_ROW_SG=2
  CHECK(ops::attention_kernel_name("rfa_attention", t, false) == "rfa_attention_tile_cm");
}

TEST_CASE("the tile's row reductions match the twin: by subgroup operations and through shared memory") {
  // lavapipe 22 (Mesa 22.3: 8-lane subgroups with arithmetic and shuffles, no clustered operations)
  // runs the shuffle-xor kernels (*_sx); devices with clustered operations the *_sg kernels (Mesa
  // 26's lavapipe: the newer-driver pass of this suite, tests/CMakeLists.txt). Under
  // the Android baseline profile (basic subgroup operations only, 16 KiB of shared memory: smaller
  // tiles, V staged over K at large D) the same device runs the exchange through shared memory.
  // RFA (the gate's energies on some shapes) and the SDPA yardstick.
  int k = 0, ran_subgroup = 0, own_runs = 0;
  size_t item = 0;
  std::vector<std::string> clustered;  // the *_tile_sg kernels that ran
  for (const char* profile : {"", "android-baseline-2022"})
    for (bool kv16 : {false, true}) {
      AttentionPath ap = tile_path(kv16 ? 0 : 1, kv16);
      ap.device_profile = profile;
      CAPTURE(profile);
      CAPTURE(describe(ap));
      const gpu::Capabilities& caps = ap.gpu().caps();
      for (const Shape& s : kShapes) {
        CAPTURE(s.N);
        CAPTURE(s.D);
        const bool gate = k++ % 3 == 0;
        if (!shard_takes(item++)) continue;
        const auto t = ops::choose_attention_tiling(caps, ap.kernels, (uint32_t)s.chunk, (uint32_t)s.D,
                                                    (uint32_t)(s.B * s.H), (uint32_t)s.N, gate);
        REQUIRE(t.tile);
        if (*profile) CHECK(!t.subgroup_reduce);
        else CHECK((int)t.subgroup_reduce + (int)t.subgroup_shuffle ==
                   ops::tile_subgroup_reduce(caps, t.workgroup, t.threads_per_row));
        ran_subgroup += t.subgroup_reduce ? 1 : 0;
        own_runs += *profile ? 0 : 1;
        if (t.subgroup_reduce && !t.subgroup_shuffle) {
          const std::string name = ops::attention_kernel_name("rfa_attention", t, kv16);
          CHECK(name.find("_tile_sg") != std::string::npos);
          clustered.push_back(name);
        }
        check_model(model(gate ? "M2.7" : "M2", s.H, s.D), s.B, s.N, s.times, s.chunk, 11, ap, kv16 ? kTolF16 : kTol);
      }
      if (kv16) continue;
      for (int D : {32, 20, 96}) {  // the SDPA yardstick: a 42-row prefill, then decode steps
        CAPTURE(D);
        if (shard_takes(item++)) check_sdpa_yardstick(ap, 2, D, 45);
      }
    }
  // A device with subgroup shuffles or clustered operations (and full subgroups of a required size)
  // ran the subgroup kernels (lavapipe 22: *_sx; Mesa 26: *_sg, by name).
  const gpu::Capabilities& caps = tile_path(1, false).gpu().caps();
  if ((caps.subgroup_ops & (VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT)) &&
      caps.subgroup_size_control && own_runs > 0)
    CHECK(ran_subgroup > 0);
  const VkSubgroupFeatureFlags cl = VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT;
  if ((caps.subgroup_ops & cl) == cl && caps.subgroup_size_control && own_runs > 0) CHECK(!clustered.empty());
  std::string names;
  for (const std::string& n : clustered)
    if (names.find(n) == std::string::npos) names += (names.empty() ? "" : ", ") + n;
  MESSAGE("the tile's row reductions by subgroup operations on " << ran_subgroup << " of " << k << " runs"
          << (names.empty() ? std::string() : "; clustered: " + names));
}
