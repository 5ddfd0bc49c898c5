// The first GPU ops (Linear, LayerNorm/RMSNorm, embedding lookup) against their CPU twins on
// off-tile shapes, and the recorder's automatic barriers on a chain of dependent dispatches.
#include <doctest/doctest.h>

#include <cstdlib>

#include "ops/embed.hpp"
#include "ops/linear.hpp"
#include "ops/norm.hpp"
#include "reference/ops_ref.hpp"
#include "test_support.hpp"
#include "core/access.hpp"

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
    gpu::Context& g = gpu_of(test::context(k));
    // The tiled kernel is 256 invocations; under a profile with fewer (the Android baseline, the
    // Vulkan minimum) the pipeline layer refuses it (test_device_profiles checks that refusal).
    if (std::string(kernel) == "tiled" && g.caps().max_workgroup_invocations < 256) {
      MESSAGE("linear kernel 'tiled' skipped: the device allows " << g.caps().max_workgroup_invocations
                                                                  << " invocations per workgroup");
      continue;
    }
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

TEST_CASE("automatic barriers across a dependent chain") {
  // y1 = W1 x; y2 = W2 y1; y3 = W3 y2: each step reads the previous step's output, so without
  // barriers the result would race. Off-tile sizes.
  const int rows = 61, d = 37;
  auto& g = test::gpu();
  LinearWeights w[3];
  std::vector<double> ref = to_double(test::random_floats((size_t)rows * d, 1));
  gpu::Buffer x = test::upload(std::vector<float>(ref.begin(), ref.end())), y[3], bw[3];
  for (int k = 0; k < 3; ++k) {
    w[k] = make_linear(d, d, 20u + (uint32_t)k, false);
    bw[k] = test::upload(w[k].weight.data);
    y[k] = test::zeros((size_t)rows * d);
    ref = ref::linear(w[k], ref, rows);
  }
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  for (int k = 0; k < 3; ++k)
    REQUIRE(ops::record_linear(g, rec, k ? y[k - 1] : x, bw[k], nullptr, y[k], {(uint32_t)rows, (uint32_t)d, (uint32_t)d}).ok());
  CHECK(rec.barrier_count() == 2);
  REQUIRE(rec.submit_and_wait().ok());
  CHECK_CLOSE_VEC(test::download(y[2], ref.size()), ref, 1e-4, 1e-4);
}

TEST_CASE("independent dispatches need no barrier") {
  auto& g = test::gpu();
  LinearWeights w = make_linear(16, 8, 3, false);
  gpu::Buffer x = test::upload(test::random_floats(10 * 16, 3)), bw = test::upload(w.weight.data);
  gpu::Buffer y1 = test::zeros(10 * 8), y2 = test::zeros(10 * 8);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_linear(g, rec, x, bw, nullptr, y1, {10, 16, 8}).ok());
  REQUIRE(ops::record_linear(g, rec, x, bw, nullptr, y2, {10, 16, 8}).ok());
  CHECK(rec.barrier_count() == 0);  // both only read x and W
  REQUIRE(rec.submit_and_wait().ok());
  if (g.timestamps_enabled()) CHECK(rec.timings().size() == 2);
}

TEST_CASE("embedding lookup matches the table, off-tile widths") {
  auto& g = test::gpu();
  for (uint32_t dim : {1u, 63u, 65u, 256u})
    for (uint32_t rows : {1u, 7u, 130u}) {
      const uint32_t vocab = 97;
      std::vector<float> table = test::random_floats((size_t)vocab * dim, dim + rows);
      std::vector<uint32_t> ids(rows);
      for (uint32_t r = 0; r < rows; ++r) ids[r] = (r * 31 + 5) % vocab;
      auto bi = g.allocator().allocate(rows * 4, gpu::MemoryKind::device, "ids");
      REQUIRE(bi.ok());
      REQUIRE(g.upload(*bi, ids.data(), rows * 4).ok());
      gpu::Buffer bt = test::upload(table), y = test::zeros((size_t)rows * dim);
      gpu::Recorder rec(g);
      REQUIRE(rec.begin().ok());
      REQUIRE(ops::record_embed(g, rec, *bi, bt, y, rows, dim).ok());
      REQUIRE(rec.submit_and_wait().ok());
      std::vector<double> want;
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = 0; c < dim; ++c) want.push_back(table[(size_t)ids[r] * dim + c]);
      CAPTURE(dim);
      CAPTURE(rows);
      const std::vector<float> got = test::download(y, want.size());
      for (size_t k = 0; k < want.size(); ++k) REQUIRE(got[k] == (float)want[k]);  // a copy: exact
    }
}
