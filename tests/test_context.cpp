// The Vulkan context: device listing and choice, adopting an app's device, the validation path,
// the memory budget and sub-allocation, and clear errors for absent devices.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "rfa/device.hpp"
#include "rfa/environment.hpp"

#include "gpu/vk_check.hpp"
#include "gpu/vk_loader.hpp"
#include "ops/linear.hpp"
#include "reference/ops_ref.hpp"
#include "test_support.hpp"
#include "core/access.hpp"

using namespace rfa;

namespace {
// Creates (and destroys) a zero-sized buffer, which violates VUID-VkBufferCreateInfo-size-00912:
// the message a validation layer must report, and one without a layer must not.
void provoke_zero_sized_buffer(Context& c) {
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 0;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer b = VK_NULL_HANDLE;
  VkResult r = vkCreateBuffer(gpu_of(c).device(), &bi, nullptr, &b);
  if (r == VK_SUCCESS && b) vkDestroyBuffer(gpu_of(c).device(), b, nullptr);
}
}  // namespace

TEST_CASE("devices are listed with type, driver and API version") {
  auto devs = list_devices();
  REQUIRE_MESSAGE(devs.ok(), devs.status().to_string());
  REQUIRE(!devs->empty());
  for (auto& d : *devs) {
    CHECK(!d.name.empty());
    CHECK(!d.type.empty());
    CHECK(!d.driver.empty());
    CHECK(d.api.find('.') != std::string::npos);
  }
  CHECK(!test::context().device_info().name.empty());
  CHECK(test::context().capabilities_summary().find("device:") != std::string::npos);
}

TEST_CASE("a device selector that matches nothing is a clear error, not a crash") {
  ContextOptions o;
  o.validation = test::validation_option();
  o.device = "no-such-gpu-anywhere";
  auto c = Context::create(o);
  REQUIRE(!c.ok());
  CHECK(c.status().code() == Code::device_error);
  CHECK(c.status().message().find("no-such-gpu-anywhere") != std::string::npos);
  o.device = "97";
  c = Context::create(o);
  REQUIRE(!c.ok());
  CHECK(c.status().message().find("out of range") != std::string::npos);
}

TEST_CASE("the library reads no environment: RFA_DEVICE and RFA_VALIDATION reach it only through the options") {
  // A device selector that matches nothing and validation on, in the environment only: a context
  // created with the default options ignores both (the best device, no validation layer).
  test::ScopedEnv device("RFA_DEVICE", "no-such-gpu-anywhere");
  test::ScopedEnv validation("RFA_VALIDATION", "1");
  test::ScopedEnv tile("RFA_ATTN_TILE", "1");
  ContextOptions o;
  uint64_t seen = 0;
  o.on_message = [&](MessageSeverity sev, const char*) { seen += sev >= MessageSeverity::warning; };
  auto c = Context::create(o);
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  CHECK(gpu_of(**c).kernels().attention_tile == -1);
  // No validation layer: the zero-sized buffer the validation test provokes goes unreported.
  provoke_zero_sized_buffer(**c);
  CHECK(seen == 0);
  CHECK((*c)->validation_message_count() == 0);
  (*c).reset();  // one context at a time
  // The programs' helper (rfa/environment.hpp) is what maps the variables onto the options.
  const ContextOptions e = context_options_from_environment();
  CHECK(e.device == "no-such-gpu-anywhere");
  CHECK(e.validation == 1);
  CHECK(e.kernels.attention_tile == 1);
  // The device the variable names is refused by name (validation as the suite runs: Wine has no
  // layer, and asking for one there fails before the device is looked for).
  ContextOptions create_with = e;
  create_with.validation = test::validation_option();
  auto refused = Context::create(create_with);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("no-such-gpu-anywhere") != std::string::npos);
}

TEST_CASE("context_options_from_environment: each RFA_* variable onto its field, the caller's own settings first") {
  const char* names[] = {"RFA_DEVICE", "RFA_VALIDATION", "RFA_DEVICE_PROFILE", "RFA_LINEAR_KERNEL",
                         "RFA_ATTN_DIRECT_KV", "RFA_ATTN_LAG_TABLE", "RFA_ATTN_SPLIT_K", "RFA_ATTN_TILE",
                         "RFA_ATTN_F16_MATH", "RFA_ATTN_COOPMAT", "RFA_NO_PUSH_DESCRIPTORS"};
  std::vector<std::unique_ptr<test::ScopedEnv>> unset;
  for (const char* n : names) unset.push_back(std::make_unique<test::ScopedEnv>(n, nullptr));
  {
    const ContextOptions d = context_options_from_environment();
    const KernelOptions k;
    CHECK(d.device.empty());
    CHECK(d.validation == 0);
    CHECK(d.device_profile.empty());
    CHECK(d.kernels.linear == k.linear);
    CHECK(d.kernels.attention_direct_kv == -1);
    CHECK(d.kernels.attention_split_k == -1);
    CHECK(d.kernels.attention_coopmat == -1);
    CHECK(d.kernels.push_descriptors);
  }
  test::ScopedEnv a("RFA_DEVICE", "llvmpipe"), b("RFA_VALIDATION", "0"), c("RFA_DEVICE_PROFILE", "intel-uhd-620"),
      d("RFA_LINEAR_KERNEL", "gemv"), e("RFA_ATTN_DIRECT_KV", "0"), f("RFA_ATTN_LAG_TABLE", "1"),
      g("RFA_ATTN_SPLIT_K", "4"), h("RFA_ATTN_TILE", "0"), i("RFA_ATTN_F16_MATH", "1"), j("RFA_ATTN_COOPMAT", "2"),
      k("RFA_NO_PUSH_DESCRIPTORS", "1");
  const ContextOptions o = context_options_from_environment();
  CHECK(o.device == "llvmpipe");
  CHECK(o.validation == 0);
  CHECK(o.device_profile == "intel-uhd-620");
  CHECK(o.kernels.linear == "gemv");
  CHECK(o.kernels.attention_direct_kv == 0);
  CHECK(o.kernels.attention_lag_table == 1);
  CHECK(o.kernels.attention_split_k == 4);
  CHECK(o.kernels.attention_tile == 0);
  CHECK(o.kernels.attention_f16_math == 1);
  CHECK(o.kernels.attention_coopmat == 2);
  CHECK(!o.kernels.push_descriptors);
  const KernelOptions same = kernel_options_from_environment();
  CHECK(same.linear == "gemv");
  CHECK(same.attention_coopmat == 2);
  // A program's flags (--device, --device-profile) and an explicit validation win over the variables.
  ContextOptions mine;
  mine.device = "1";
  mine.device_profile = "apple-m1-moltenvk";
  mine.validation = 1;
  const ContextOptions kept = context_options_from_environment(mine);
  CHECK(kept.device == "1");
  CHECK(kept.device_profile == "apple-m1-moltenvk");
  CHECK(kept.validation == 1);
  CHECK(kept.kernels.linear == "gemv");
}

TEST_CASE("the validation path catches a message provoked on purpose") {
  uint64_t seen = 0;
  std::string text;
  ContextOptions o;
  if (!test::validation_enabled()) {
    MESSAGE("skipped: no validation layer here (RFA_TEST_VALIDATION=off, as under Wine), so no message to provoke");
    return;
  }
  o.validation = 1;
  o.on_message = [&](MessageSeverity sev, const char* msg) {
    if (sev >= MessageSeverity::warning) {
      ++seen;
      text = msg;
    }
  };
  auto c = Context::create(o);
  REQUIRE(c.ok());
  // A zero-sized buffer violates VUID-VkBufferCreateInfo-size-00912.
  provoke_zero_sized_buffer(**c);
  CHECK(seen >= 1);
  CHECK(text.find("size") != std::string::npos);
  CHECK((*c)->validation_message_count() >= 1);
}

TEST_CASE("a machine without a Vulkan loader gets an error naming the files looked for") {
  PFN_vkGetInstanceProcAddr gipa = nullptr;
  Status s = gpu::open_vulkan_library({"librfa-no-such-loader.so.1", "rfa-no-such-loader.dll"}, &gipa);
  REQUIRE(!s.ok());
  CHECK(!gipa);
  CHECK(s.code() == Code::device_error);
  CHECK(s.message().find("no Vulkan loader: librfa-no-such-loader.so.1 / rfa-no-such-loader.dll not found") == 0);
  // The names this platform tries are the loader's own.
  const auto& names = gpu::vulkan_loader_names();
  REQUIRE(!names.empty());
#if defined(_WIN32)
  CHECK(names[0] == "vulkan-1.dll");
#elif !defined(__APPLE__)
  CHECK(names[0] == "libvulkan.so.1");
#endif
  REQUIRE(gpu::open_vulkan_library(names, &gipa).ok());
  CHECK(static_cast<bool>(gipa));
}

namespace {
// A vkGetInstanceProcAddr of "another loader": it knows vkCreateInstance under a different address.
VKAPI_ATTR VkResult VKAPI_CALL other_create_instance(const VkInstanceCreateInfo*, const VkAllocationCallbacks*,
                                                     VkInstance*) {
  return VK_ERROR_INITIALIZATION_FAILED;
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL other_gipa(VkInstance, const char* name) {
  if (std::strcmp(name, "vkCreateInstance") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&other_create_instance);
  return nullptr;
}
}  // namespace

TEST_CASE("an app's device from a second Vulkan loader is refused, not mixed with the first") {
  REQUIRE(gpu::load_vulkan().ok());
  AdoptedDevice a;
  // Never touched: the loader check comes first.
  a.instance = reinterpret_cast<VkInstance>(uintptr_t{16});
  a.physical_device = reinterpret_cast<VkPhysicalDevice>(uintptr_t{32});
  a.device = reinterpret_cast<VkDevice>(uintptr_t{48});
  a.queue = reinterpret_cast<VkQueue>(uintptr_t{64});
  a.get_instance_proc_addr = other_gipa;
  auto c = Context::adopt(a, {});
  REQUIRE(!c.ok());
  CHECK(c.status().code() == Code::invalid_argument);
  CHECK(c.status().message().find("another Vulkan loader") != std::string::npos);
}

TEST_CASE("a Vulkan loader without a driver is a clear error from list_devices and Context::create") {
  // The loader reads its driver list (VK_ICD_FILENAMES / VK_DRIVER_FILES) at each vkCreateInstance.
  if (test::under_wine()) {
    // Wine's vulkan-1.dll hands the work to the host's loader, which reads the Unix environment,
    // not this Windows process's: the variables below cannot reach it.
    MESSAGE("skipped under Wine: the host's Vulkan loader does not see this process's VK_ICD_FILENAMES");
    return;
  }
  const std::string nowhere = test::temp_dir("no_icd") + "/no-such-icd.json";
  test::ScopedEnv icd("VK_ICD_FILENAMES", nowhere.c_str());
  test::ScopedEnv drivers("VK_DRIVER_FILES", nowhere.c_str());
  auto devs = list_devices();
  REQUIRE(!devs.ok());
  CHECK(devs.status().code() == Code::device_error);
  CHECK(devs.status().message().find("no Vulkan driver") != std::string::npos);
  ContextOptions o;
  o.validation = 0;
  auto c = Context::create(o);
  REQUIRE(!c.ok());
  CHECK(c.status().message().find("no Vulkan driver") != std::string::npos);
}

TEST_CASE("an app's own instance, device and queue can be adopted, used and handed back") {
  // The app side: plain Vulkan, validation on. The test reaches Vulkan through the runtime's own
  // function pointers (gpu/vk.hpp), loaded here before the first call.
  REQUIRE(gpu::load_vulkan_functions(VK_NULL_HANDLE).ok());
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = test::validation_enabled() ? 1 : 0;
  ici.ppEnabledLayerNames = &layer;
  VkInstance inst = VK_NULL_HANDLE;
  REQUIRE(vkCreateInstance(&ici, nullptr, &inst) == VK_SUCCESS);
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst, &n, nullptr);
  REQUIRE(n > 0);
  std::vector<VkPhysicalDevice> devs(n);
  vkEnumeratePhysicalDevices(inst, &n, devs.data());
  VkPhysicalDevice phys = devs[0];
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  uint32_t family = 0;
  while (family < nq && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  REQUIRE(family < nq);
  float prio = 1.f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkDevice dev = VK_NULL_HANDLE;
  REQUIRE(vkCreateDevice(phys, &dci, nullptr, &dev) == VK_SUCCESS);
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(dev, family, 0, &queue);

  {
    // With the app's vkGetInstanceProcAddr (the same loader the runtime uses: accepted).
    AdoptedDevice a{inst, phys, dev, queue, family, {}, vkGetInstanceProcAddr};
    auto c = Context::adopt(a, {});
    REQUIRE_MESSAGE(c.ok(), c.status().to_string());
    gpu::Context& g = gpu_of(**c);
    CHECK(!g.owns_device());
    CHECK(!g.caps().push_descriptors);  // the app did not enable it: pooled descriptor sets are used
    // Run a Linear on the adopted device.
    LinearWeights w;
    w.in = 5;
    w.out = 3;
    w.weight = {{3, 5}, test::random_floats(15, 4)};
    w.bias = {{3}, test::random_floats(3, 5)};
    std::vector<float> x = test::random_floats(10, 6);
    auto bx = g.allocator().allocate(40, gpu::MemoryKind::device, "x");
    auto bw = g.allocator().allocate(60, gpu::MemoryKind::device, "w");
    auto bb = g.allocator().allocate(12, gpu::MemoryKind::device, "b");
    auto by = g.allocator().allocate(24, gpu::MemoryKind::device, "y");
    REQUIRE((bx.ok() && bw.ok() && bb.ok() && by.ok()));
    REQUIRE(g.upload(*bx, x.data(), 40).ok());
    REQUIRE(g.upload(*bw, w.weight.data.data(), 60).ok());
    REQUIRE(g.upload(*bb, w.bias.data.data(), 12).ok());
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_linear(g, rec, *bx, *bw, &*bb, *by, {2, 5, 3}).ok());
    REQUIRE(rec.submit_and_wait().ok());
    std::vector<float> y(6);
    REQUIRE(g.download(*by, y.data(), 24).ok());
    std::vector<double> ref = ref::linear(w, std::vector<double>(x.begin(), x.end()), 2);
    CHECK_CLOSE_VEC(y, ref, 1e-5, 1e-5);
  }  // runtime destroyed here: it must not destroy the app's handles

  // The app's handles are still valid: use the queue and device, then destroy them ourselves.
  CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS);
  CHECK(vkDeviceWaitIdle(dev) == VK_SUCCESS);
  vkDestroyDevice(dev, nullptr);
  vkDestroyInstance(inst, nullptr);
}

TEST_CASE("the memory budget gives a clear out-of-memory error and allocations are reused") {
  ContextOptions o;
  o.validation = test::validation_option();
  o.memory_budget = 1 << 20;  // 1 MiB
  auto c = Context::create(o);
  REQUIRE(c.ok());
  gpu::Allocator& al = gpu_of(**c).allocator();
  auto a = al.allocate(600 << 10, gpu::MemoryKind::device, "first tensor");
  REQUIRE(a.ok());
  auto b = al.allocate(600 << 10, gpu::MemoryKind::device, "second tensor");
  REQUIRE(!b.ok());
  CHECK(b.status().code() == Code::out_of_memory);
  CHECK(b.status().message().find("second tensor") != std::string::npos);
  CHECK(b.status().message().find("budget") != std::string::npos);
  uint64_t reserved = al.reserved_bytes();
  a->release();
  CHECK(al.used_bytes() == 0);
  auto d = al.allocate(900 << 10, gpu::MemoryKind::device, "third tensor");
  CHECK(d.ok());
  CHECK(al.reserved_bytes() == reserved);  // sub-allocated from the same block, no new VkDeviceMemory
  CHECK(al.peak_bytes() >= (900u << 10));
  // Many small tensors share one block.
  std::vector<gpu::Buffer> small;
  for (int i = 0; i < 20; ++i) {
    auto s = al.allocate(100, gpu::MemoryKind::device, "small");
    REQUIRE(s.ok());
    small.push_back(s.take());
  }
  CHECK(al.reserved_bytes() == reserved);
}

TEST_CASE("an oversized block goes back to the driver when its tensor is freed") {
  gpu::Allocator& al = test::gpu().allocator();
  if (test::gpu().caps().packed_bindings) {  // one arena, kept for the context's life (device-profiles.md)
    MESSAGE("skipped: packed bindings (the device profile's storage-buffer limit) keep every tensor in one arena");
    return;
  }
  const uint64_t before = al.reserved_bytes();
  {
    auto big = al.allocate(100ull << 20, gpu::MemoryKind::device, "a 100 MiB tensor");
    REQUIRE_MESSAGE(big.ok(), big.status().to_string());
    CHECK(al.reserved_bytes() >= before + (100ull << 20));
    float x = 3.f, y = 0.f;
    REQUIRE(test::gpu().upload(*big, &x, 4, (100ull << 20) - 4).ok());
    REQUIRE(test::gpu().download(*big, &y, 4, (100ull << 20) - 4).ok());
    CHECK(y == 3.f);
  }
  CHECK(al.reserved_bytes() == before);
  auto again = al.allocate(1 << 20, gpu::MemoryKind::device, "after");
  CHECK(again.ok());
}

TEST_CASE("after device loss the context refuses work with device_lost but can still be destroyed") {
  ContextOptions o;
  o.validation = test::validation_option();
  auto c = Context::create(o);
  REQUIRE(c.ok());
  gpu::Context& g = gpu_of(**c);
  auto before = g.allocator().allocate(1024, gpu::MemoryKind::device, "kept across the loss");
  REQUIRE(before.ok());
  // Simulate what a failed vkQueueSubmit / vkWaitForFences reports on a lost device.
  Status s = g.note(gpu::vk_status(VK_ERROR_DEVICE_LOST, "vkQueueSubmit(...)", __FILE__, __LINE__));
  CHECK(s.code() == Code::device_lost);
  CHECK(s.message().find("vkQueueSubmit") != std::string::npos);
  CHECK((*c)->lost());
  auto after = g.allocator().allocate(1024, gpu::MemoryKind::device, "after the loss");
  CHECK(after.status().code() == Code::device_lost);
  gpu::Recorder rec(g);
  CHECK(rec.begin().code() == Code::device_lost);
  float x = 1.f;
  CHECK(g.upload(*before, &x, 4).code() == Code::device_lost);
}  // destroying the context and the buffer allocated before the loss must not crash

TEST_CASE("self_check: a Linear op of off-tile shape against the library's own CPU loop (no twin in librfa)") {
  auto r = self_check(test::context());
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->rows == 61);
  CHECK(r->in == 100);
  CHECK(r->out == 257);
  CHECK(r->pass);
  CHECK(r->max_abs_error < 1e-3);
  CHECK(r->max_abs_error > 0.0);  // fp32 on the device against double on the host: never exactly equal
}
