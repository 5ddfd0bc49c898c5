// Shared test helpers: one validated Vulkan context per test process, random data, comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/recorder.hpp"
#include "rfa/context.hpp"

namespace rfa::test {

// The process-wide test context: lavapipe (or RFA_DEVICE), validation layer on. Every validation
// message of warning or error severity fails the running test case (and the process).
// Kernel variants follow the RFA_* variables of kernel_options_from_environment(), so CTest can run
// a suite again on another path (test_rfa_attention_tiled).
rfa::Context& context();
gpu::Context& gpu();
// A validated context with these kernel variants forced: created on first use, kept to the end.
rfa::Context& context(const KernelOptions& kernels);
uint64_t validation_messages();
// Destroys the shared context (so messages emitted during teardown are still counted).
void shutdown();

// Uploads host floats into a new device buffer (REQUIREs success).
gpu::Buffer upload(const std::vector<float>& data, const char* label = "test");
gpu::Buffer zeros(size_t floats, const char* label = "test");
std::vector<float> download(const gpu::Buffer& b, size_t floats);

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Largest violation of |gpu - ref| <= atol + rtol |ref|, as a ratio (<= 1 passes); index in *where.
double max_violation(const std::vector<float>& gpu, const std::vector<double>& ref, double atol, double rtol,
                     size_t* where = nullptr);

std::string source_dir();  // RFA_SOURCE_DIR
std::string temp_dir(const std::string& name);  // a fresh empty folder under the build's tmp

}  // namespace rfa::test

// Fails the test unless the GPU result matches the CPU twin within atol + rtol |ref| everywhere.
#define CHECK_CLOSE_VEC(gpu_vec, ref_vec, atol, rtol)                                                   \
  do {                                                                                                  \
    size_t where_ = 0;                                                                                  \
    double v_ = ::rfa::test::max_violation((gpu_vec), (ref_vec), (atol), (rtol), &where_);              \
    INFO("worst index " << where_ << ": gpu " << (gpu_vec)[where_] << " vs ref " << (ref_vec)[where_]); \
    CHECK(v_ <= 1.0);                                                                                   \
  } while (0)
