// The kernels-v3 switches (docs/math.md §9, "Kernels v3"): each off and on, on the path it changes
// (forced through KernelOptions), against the double-precision twin, and off against on: they move
// operands and reorder operations, never change what is computed.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attention_support.hpp"
#include "ops/rfa_attention.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// fp16 products and matrices: tests/test_attention_tile.cpp states the bound.
constexpr double kTolF16Math = 4 * kTolF16;

struct Switch {
  const char* name;
  int KernelOptions::*field;
  int off, on;
  int tile, f16_math, coopmat;  // the path: the tile (forced), fp16 products, emulated matrices
  bool kv_f16;
};

}  // namespace

TEST_CASE("every v3 switch off and on matches the twin, and off equals on to rounding") {
  const Switch switches[] = {
      {"attention_fma (tile)", &KernelOptions::attention_fma, 0, 1, 1, 0, 0, false},
      {"attention_fma (direct walk)", &KernelOptions::attention_fma, 0, 1, 0, 0, 0, false},
      {"attention_q_registers", &KernelOptions::attention_q_registers, 0, 1, 1, 0, 0, false},
      {"attention_pad_strides", &KernelOptions::attention_pad_strides, 0, 1, 1, 0, 0, false},
      {"attention_lag_e2 (tile)", &KernelOptions::attention_lag_e2, 0, 1, 1, 0, 0, false},
      {"attention_lag_e2 (direct walk)", &KernelOptions::attention_lag_e2, 0, 1, 0, 0, 0, true},
      {"attention_f16_chunk (1 / 4)", &KernelOptions::attention_f16_chunk, 1, 4, 1, 1, 0, false},
      {"attention_pad_strides (matrices)", &KernelOptions::attention_pad_strides, 0, 1, 1, 0, 2, false},
      {"attention_prefetch (matrices)", &KernelOptions::attention_prefetch, 0, 1, 1, 0, 2, true},
      {"attention_prefetch (matrices, fp32 caches)", &KernelOptions::attention_prefetch, 0, 1, 1, 0, 2, false},
      {"attention_raw_f16 (matrices)", &KernelOptions::attention_raw_f16, 0, 1, 1, 0, 2, true},
      // The device's own matrices (Mesa 26's lavapipe: VK_KHR_cooperative_matrix; skipped elsewhere).
      {"attention_prefetch (the device's matrices)", &KernelOptions::attention_prefetch, 0, 1, 1, 0, 1, true},
      {"attention_raw_f16 (the device's matrices)", &KernelOptions::attention_raw_f16, 0, 1, 1, 0, 1, true},
      {"attention_pad_strides (the device's matrices)", &KernelOptions::attention_pad_strides, 0, 1, 1, 0, 1, false},
      // Per element of the accumulators (VK_NV_cooperative_matrix2: Mesa 26's lavapipe; skipped elsewhere).
      {"attention_coopmat_per_element", &KernelOptions::attention_coopmat_per_element, 0, 1, 1, 0, 1, true},
      {"attention_coopmat_per_element (fp32 caches)", &KernelOptions::attention_coopmat_per_element, 0, 1, 1, 0, 1, false},
  };
  int ran = 0;
  for (const Switch& sw : switches) {
    CAPTURE(sw.name);
    AttentionPath paths[2];
    for (int w = 0; w < 2; ++w) {
      paths[w] = sw.tile ? tile_path(1, sw.kv_f16, sw.f16_math, sw.coopmat) : path(-1, 1, -1, sw.kv_f16);
      paths[w].kernels.*(sw.field) = w == 0 ? sw.off : sw.on;
    }
    const gpu::Capabilities& caps = paths[1].gpu().caps();
    const auto t = ops::choose_attention_tiling(caps, paths[1].kernels, 40, 20, 4, 150, true);
    const bool per_element = sw.field == &KernelOptions::attention_coopmat_per_element;
    if ((sw.f16_math && !t.f16_math) || (sw.coopmat && !t.coopmat) || (per_element && !t.coopmat_pe)) {
      MESSAGE("skipped on this device: " << t.why);
      continue;
    }
    ++ran;
    const double tol = sw.f16_math || sw.coopmat ? kTolF16Math : sw.kv_f16 ? kTolF16 : kTol;
    // Several key tiles (the prefetch carries K and V across them), a partial last one, the gate.
    const AttentionParams p = model("M2.7", 2, 20);
    const Inputs in = make_inputs(p, 2, 150, 7, 1);
    GpuRun runs[2];
    for (int w = 0; w < 2; ++w) {
      check_model(p, 2, 150, 1, 40, 7, paths[w], tol);
      Fixture f(p, in, 0, paths[w]);
      runs[w] = f.run(40);
    }
    // Off against on: fp32 paths to a few ulps of the scale; fp16 paths within their rounding.
    const double same = sw.f16_math ? kTolF16Math : sw.coopmat ? 1e-3 : 1e-5;
    CHECK_CLOSE_VEC(runs[1].out, to_double(runs[0].out), same, same);
  }
  CHECK(ran >= 7);
}
