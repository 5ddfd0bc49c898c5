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
// Whether the suites run under the validation layer: yes, unless RFA_TEST_VALIDATION=off says this
// platform has none (Wine exposes no Vulkan layers); then the test context runs without it, says
// so once on stderr, and the cases that need a layer skip that part with a message.
bool validation_enabled();
int validation_option();  // for ContextOptions::validation: 1, or 0 where validation_enabled() is false
// A validated context with these kernel variants forced: created on first use, kept to the end.
rfa::Context& context(const KernelOptions& kernels);
// ... and under a device profile (docs/device-profiles.md; "" the process's RFA_DEVICE_PROFILE): a
// case that needs a path only some devices take (the tile without clustered subgroup operations).
rfa::Context& context(const KernelOptions& kernels, const std::string& device_profile);
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

// Sets an environment variable for the scope (value nullptr: unsets it), then puts back what was
// there; setenv / _putenv_s by platform.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};
void set_env(const char* name, const char* value);  // value nullptr: unset

// Whether this Windows program runs under Wine (ntdll exports wine_get_version); false elsewhere.
bool under_wine();

// Shards of a heavy case's loop: RFA_TEST_SHARD=k/n (CTest's <suite>_<k>of<n> entries,
// tests/CMakeLists.txt) runs the items i with i % n == k - 1; unset, every item. A case calls it
// once per item of its loop, counting every item, so that the shards together cover the loop.
bool shard_takes(size_t item);
// "k/n" of RFA_TEST_SHARD, or "" unset (for messages).
std::string shard_name();

// A program of this build (RFA_BUILD_DIR/name, with .exe on Windows). Where RFA_TEST_LAUNCHER
// names a program (the newer driver's .drivers/mesa26/run), run_tool starts the program through
// it: the suites on another driver start rfa-run on the same one.
std::string tool_path(const std::string& name);
// Runs that program without a shell (posix_spawn / CreateProcessW), so the tests drive it alike on
// every OS: `args` split at spaces, '...' keeping spaces inside one argument; stdout written to
// `out` and stderr to `err` ("": discarded). Returns the exit code, -1 when it could not run or
// died of a signal.
int run_tool(const std::string& name, const std::string& args, const std::string& out = "",
             const std::string& err = "");

}  // namespace rfa::test

// Fails the test unless the GPU result matches the CPU twin within atol + rtol |ref| everywhere.
#define CHECK_CLOSE_VEC(gpu_vec, ref_vec, atol, rtol)                                                   \
  do {                                                                                                  \
    size_t where_ = 0;                                                                                  \
    double v_ = ::rfa::test::max_violation((gpu_vec), (ref_vec), (atol), (rtol), &where_);              \
    INFO("worst index " << where_ << ": gpu " << (gpu_vec)[where_] << " vs ref " << (ref_vec)[where_]); \
    CHECK(v_ <= 1.0);                                                                                   \
  } while (0)
