#include "test_support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace rfa::test {
namespace {
std::atomic<uint64_t> g_messages{0};
std::mutex g_mutex;
std::vector<std::pair<std::string, std::unique_ptr<rfa::Context>>> g_contexts;  // by kernel options

// Every field: two paths that differ in any option must not share a context (a context created for
// the cooperative tile once served a later request for the shared-memory key tiles, and the
// reverse, whichever came first).
std::string key_of(const KernelOptions& k) {
  return k.linear + "|" + std::to_string(k.attention_direct_kv) + "|" + std::to_string(k.attention_lag_table) + "|" +
         std::to_string(k.attention_split_k) + "|" + std::to_string(k.attention_tile) + "|" +
         std::to_string(k.attention_f16_math) + "|" + std::to_string(k.attention_coopmat) + "|" +
         std::to_string(k.push_descriptors);
}
}  // namespace

rfa::Context& context(const KernelOptions& kernels) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string key = key_of(kernels);
  for (auto& [k, c] : g_contexts)
    if (k == key) return *c;
  ContextOptions o;
  o.validation = 1;  // tests always run under the Khronos validation layer
  o.kernels = kernels;
  o.on_message = [](MessageSeverity sev, const char* msg) {
    if (sev < MessageSeverity::warning) return;
    g_messages.fetch_add(1);
    std::string text = std::string("Vulkan validation message: ") + msg;
    ADD_FAIL_CHECK_AT(__FILE__, __LINE__, text);
  };
  auto c = rfa::Context::create(o);
  if (!c) {
    std::fprintf(stderr, "cannot create the test Vulkan context: %s\n", c.status().to_string().c_str());
    std::exit(1);
  }
  g_contexts.emplace_back(key, c.take());
  return *g_contexts.back().second;
}

rfa::Context& context() {
  static const KernelOptions from_env = kernel_options_from_environment();
  return context(from_env);
}

gpu::Context& gpu() { return context().impl(); }
uint64_t validation_messages() { return g_messages.load(); }
void shutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_contexts.clear();
}

gpu::Buffer upload(const std::vector<float>& data, const char* label) {
  auto b = gpu().upload_new(data, label);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  return b.take();
}

gpu::Buffer zeros(size_t floats, const char* label) { return upload(std::vector<float>(floats, 0.0f), label); }

std::vector<float> download(const gpu::Buffer& b, size_t floats) {
  std::vector<float> out(floats);
  Status s = gpu().download(b, out.data(), floats * 4);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double max_violation(const std::vector<float>& g, const std::vector<double>& r, double atol, double rtol,
                     size_t* where) {
  double worst = 0;
  size_t wi = 0;
  if (g.size() != r.size()) {
    if (where) *where = 0;
    return 1e30;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    double err = std::fabs((double)g[i] - r[i]);
    double v = err / (atol + rtol * std::fabs(r[i]));
    if (!std::isfinite((double)g[i]) || std::isnan(v)) v = 1e30;
    if (v > worst) {
      worst = v;
      wi = i;
    }
  }
  if (where) *where = wi;
  return worst;
}

std::string source_dir() {
  if (const char* s = std::getenv("RFA_SOURCE_DIR")) return s;
  return RFA_SOURCE_DIR;
}

std::string temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path base = std::getenv("RFA_BUILD_DIR") ? fs::path(std::getenv("RFA_BUILD_DIR")) / "test-tmp"
                                               : fs::temp_directory_path() / "rfa-test-tmp";
  fs::path p = base / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p, ec);
  return p.string();
}

}  // namespace rfa::test
