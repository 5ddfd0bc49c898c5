// The first GPU ops (Linear, LayerNorm/RMSNorm, axpby) against their double-precision CPU twins on
// off-tile shapes, and the recorder's automatic barriers on a chain of dependent dispatches.
#include <doctest/doctest.h>

#include <cstdlib>

#include "ops/elementwise.hpp"
#include "ops/linear.hpp"
#include "ops/norm.hpp"
#include "reference/ops_ref.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

LinearWeights make_linear(int in, int out, uint32_t seed, bool bias) {
  LinearWeights w;
  w.in = in;
  w.out = out;
  w.weight.shape = {out, in};
  w.weight.data = test::random_floats((size_t)in * out, seed);
  if (bias) {
    w.bias.shape = {out};
    w.bias.data = test::random_floats((size_t)out, seed + 1);
  }
  return w;
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

gpu::Buffer upload_to(gpu::Context& g, const std::vector<float>& data) {
  auto b = g.upload_new(data, "test");
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  return b.take();
}

void check_linear(gpu::Context& g, int rows, int in, int out, bool bias, bool relu, bool accumulate) {
  CAPTURE(rows);
  CAPTURE(in);
  CAPTURE(out);
  CAPTURE(bias);
  CAPTURE(relu);
  CAPTURE(accumulate);
  LinearWeights w = make_linear(in, out, 1000u + (uint32_t)(rows * 7 + in * 13 + out), bias);
  std::vector<float> x = test::random_floats((size_t)rows * in, 7u + (uint32_t)rows);
  std::vector<float> y0 = test::random_floats((size_t)rows * out, 99u);
  std::vector<double> ref = ref::linear(w, to_double(x), rows);
  if (relu) ref = ref::relu(ref);
  if (accumulate) ref = ref::add(ref, to_double(y0));

  gpu::Buffer bx = upload_to(g, x), bw = upload_to(g, w.weight.data),
              by = upload_to(g, accumulate ? y0 : std::vector<float>(y0.size(), 0.f));
  gpu::Buffer bb = upload_to(g, bias ? w.bias.data : std::vector<float>{0.f});
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  ops::LinearOptions opt;
  opt.relu = relu;
  opt.accumulate = accumulate;
  Status s = ops::record_linear(g, rec, bx, bw, bias ? &bb : nullptr, by, {(uint32_t)rows, (uint32_t)in, (uint32_t)out}, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  s = rec.submit_and_wait();
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  // fp32 accumulation over `in` terms of magnitude <= 1: error grows like sqrt(in) ulps.
  std::vector<float> got(ref.size());
  REQUIRE(g.download(by, got.data(), got.size() * 4).ok());
  CHECK_CLOSE_VEC(got, ref, 1e-5 * std::max(1, in), 1e-5);
}

}  // namespace

TEST_CASE("linear matches the CPU twin on off-tile shapes, with every kernel") {
  // The device's own choice, then each kernel forced through a context's KernelOptions.
  for (const char* kernel : {"", "tiled", "gemv", "direct"}) {
    CAPTURE(std::string(kernel));
    KernelOptions k;
    k.linear = kernel;
    gpu::Context& g = test::context(k).impl();
    for (int rows : {1, 7, 61, 113, 257})
      for (int dim : {1, 3, 64, 100, 257}) check_linear(g, rows, dim, (dim * 3) % 97 + 1, true, false, false);
    // few rows and many rows (each kernel has a few-row path) with every switch
    for (int rows : {1, 3, 5, 8, 70})
      for (bool bias : {false, true})
        for (bool relu : {false, true})
          for (bool acc : {false, true}) check_linear(g, rows, 67, 129, bias, relu, acc);
    check_linear(g, 3, 257, 1000, true, false, false);
  }
}

TEST_CASE("layer norm and rms norm match the CPU twin") {
  for (int rows : {1, 7, 61, 113})
    for (int dim : {1, 3, 64, 100, 257})
      for (bool rms : {false, true}) {
        CAPTURE(rows);
        CAPTURE(dim);
        CAPTURE(rms);
        std::vector<float> x = test::random_floats((size_t)rows * dim, 5u + (uint32_t)dim, -3.f, 5.f);
        HostTensor wt{{dim}, test::random_floats((size_t)dim, 11u, 0.5f, 1.5f)};
        HostTensor bt{{dim}, rms ? std::vector<float>{} : test::random_floats((size_t)dim, 12u)};
        if (rms) bt.shape.clear();
        std::vector<double> ref = rms ? ref::rms_norm(to_double(x), rows, dim, 1e-5, wt)
                                      : ref::layer_norm(to_double(x), rows, dim, 1e-5, wt, bt);
        auto& g = test::gpu();
        gpu::Buffer bx = test::upload(x), bw = test::upload(wt.data), bb = test::upload(rms ? wt.data : bt.data);
        gpu::Buffer by = test::zeros(x.size());
        gpu::Recorder rec(g);
        REQUIRE(rec.begin().ok());
        REQUIRE(ops::record_norm(g, rec, bx, bw, rms ? nullptr : &bb, by, rows, dim, 1e-5f, rms).ok());
        REQUIRE(rec.submit_and_wait().ok());
        CHECK_CLOSE_VEC(test::download(by, ref.size()), ref, 1e-4, 1e-4);
      }
}

TEST_CASE("axpby and automatic barriers across a dependent chain") {
  // y1 = 2a + b; y2 = y1 - a; y3 = 0.5 y2 (scale); each step reads the previous step's output,
  // so without barriers the result would race.
  const uint32_t n = 100003;  // not a multiple of the 256-wide workgroup
  std::vector<float> a = test::random_floats(n, 1), b = test::random_floats(n, 2);
  auto& g = test::gpu();
  gpu::Buffer ba = test::upload(a), bb = test::upload(b), y1 = test::zeros(n), y2 = test::zeros(n), y3 = test::zeros(n);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_axpby(g, rec, ba, bb, y1, n, 2.f, 1.f).ok());
  REQUIRE(ops::record_axpby(g, rec, y1, ba, y2, n, 1.f, -1.f).ok());
  REQUIRE(ops::record_axpby(g, rec, y2, y2, y3, n, 0.5f, 0.f).ok());
  CHECK(rec.barrier_count() == 2);
  REQUIRE(rec.submit_and_wait().ok());
  std::vector<double> ref(n);
  for (uint32_t i = 0; i < n; ++i) ref[i] = 0.5 * ((2.0 * a[i] + b[i]) - a[i]);
  CHECK_CLOSE_VEC(test::download(y3, n), ref, 1e-6, 1e-6);
}

TEST_CASE("independent dispatches need no barrier") {
  auto& g = test::gpu();
  gpu::Buffer a = test::upload(test::random_floats(1000, 3)), y1 = test::zeros(1000), y2 = test::zeros(1000);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_axpby(g, rec, a, a, y1, 1000, 1.f, 0.f).ok());
  REQUIRE(ops::record_axpby(g, rec, a, a, y2, 1000, 3.f, 0.f).ok());
  CHECK(rec.barrier_count() == 0);  // both only read `a`
  REQUIRE(rec.submit_and_wait().ok());
  if (g.timestamps_enabled()) CHECK(rec.timings().size() == 2);
}
