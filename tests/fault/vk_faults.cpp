#include "fault/vk_faults.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "gpu/vk_check.hpp"
#include "gpu/vk_loader.hpp"
#include "hold_driver.hpp"

#if !defined(_WIN32)
#include <dlfcn.h>
#endif

// The sanitizers' symbolizer (present in the ASan/TSan builds): names a call site by function,
// file and line. Weak: elsewhere the site is named by module and offset. (ELF only.)
#if !defined(_WIN32)
extern "C" void __sanitizer_symbolize_pc(void* pc, const char* fmt, char* out, size_t size) __attribute__((weak));
#endif

namespace rfa::test::faults {
namespace {

// How an injected error meets the real device (vk_faults.hpp's header comment).
enum class Kind {
  create,  // nothing reaches the driver
  end,     // vkEndCommandBuffer: the real call runs, then the error is returned
};

constexpr VkResult OOH = VK_ERROR_OUT_OF_HOST_MEMORY, OOD = VK_ERROR_OUT_OF_DEVICE_MEMORY,
                   LOST = VK_ERROR_DEVICE_LOST, INIT = VK_ERROR_INITIALIZATION_FAILED;

// Every function of the runtime (runtime/src) that returns a VkResult, with the errors of its
// specification's "Return Codes" that a driver really returns. vkResetDescriptorPool returns none:
// it is counted, never failed. vkCreateComputePipelines adds VK_ERROR_UNKNOWN and
// VK_ERROR_INVALID_SHADER_NV: a driver that will not compile a kernel.
#define RFA_FAULT_FUNCTIONS(X)                                                                                  \
  X(vkCreateInstance, create, OOH, OOD, INIT, VK_ERROR_LAYER_NOT_PRESENT, VK_ERROR_EXTENSION_NOT_PRESENT,       \
    VK_ERROR_INCOMPATIBLE_DRIVER)                                                                               \
  X(vkEnumeratePhysicalDevices, create, OOH, OOD, INIT)                                                         \
  X(vkEnumerateInstanceVersion, create, OOH)                                                                    \
  X(vkEnumerateInstanceLayerProperties, create, OOH, OOD)                                                       \
  X(vkEnumerateInstanceExtensionProperties, create, OOH, OOD, VK_ERROR_LAYER_NOT_PRESENT)                       \
  X(vkEnumerateDeviceExtensionProperties, create, OOH, OOD, VK_ERROR_LAYER_NOT_PRESENT)                         \
  X(vkCreateDevice, create, OOH, OOD, INIT, VK_ERROR_EXTENSION_NOT_PRESENT, VK_ERROR_FEATURE_NOT_PRESENT,       \
    VK_ERROR_TOO_MANY_OBJECTS, LOST)                                                                            \
  X(vkCreateCommandPool, create, OOH, OOD)                                                                      \
  X(vkAllocateCommandBuffers, create, OOH, OOD)                                                                 \
  X(vkBeginCommandBuffer, create, OOH, OOD)                                                                     \
  X(vkEndCommandBuffer, end, OOH, OOD)                                                                          \
  X(vkResetCommandBuffer, create, OOD)                                                                          \
  X(vkCreateFence, create, OOH, OOD)                                                                            \
  X(vkResetFences, create, OOD)                                                                                 \
  X(vkQueueSubmit, create, OOH, OOD, LOST)                                                                      \
  X(vkWaitForFences, create, VK_TIMEOUT, OOH, OOD, LOST)                                                        \
  X(vkGetFenceStatus, create, OOH, OOD, LOST)                                                                   \
  X(vkDeviceWaitIdle, create, OOH, OOD, LOST)                                                                   \
  X(vkCreateBuffer, create, OOH, OOD)                                                                           \
  X(vkAllocateMemory, create, OOH, OOD)                                                                         \
  X(vkBindBufferMemory, create, OOH, OOD)                                                                       \
  X(vkMapMemory, create, OOH, OOD, VK_ERROR_MEMORY_MAP_FAILED, LOST)                                            \
  X(vkCreateImage, create, OOH, OOD)                                                                            \
  X(vkBindImageMemory, create, OOH, OOD)                                                                        \
  X(vkCreateImageView, create, OOH, OOD)                                                                        \
  X(vkCreateQueryPool, create, OOH, OOD)                                                                        \
  X(vkGetQueryPoolResults, create, OOH, OOD, LOST)                                                              \
  X(vkCreateDescriptorPool, create, OOH, OOD)                                                                   \
  X(vkAllocateDescriptorSets, create, OOH, OOD, VK_ERROR_FRAGMENTED_POOL, VK_ERROR_OUT_OF_POOL_MEMORY)          \
  X(vkResetDescriptorPool, create)                                                                              \
  X(vkCreateShaderModule, create, OOH, OOD)                                                                     \
  X(vkCreateDescriptorSetLayout, create, OOH, OOD)                                                              \
  X(vkCreatePipelineLayout, create, OOH, OOD)                                                                   \
  X(vkCreatePipelineCache, create, OOH, OOD)                                                                    \
  X(vkCreateComputePipelines, create, OOH, OOD, VK_ERROR_UNKNOWN, VK_ERROR_INVALID_SHADER_NV)

enum Index {
#define RFA_FAULT_INDEX(name, kind, ...) i_##name,
  RFA_FAULT_FUNCTIONS(RFA_FAULT_INDEX)
#undef RFA_FAULT_INDEX
      kFunctionCount
};

constexpr Kind kKinds[] = {
#define RFA_FAULT_KIND(name, kind, ...) Kind::kind,
    RFA_FAULT_FUNCTIONS(RFA_FAULT_KIND)
#undef RFA_FAULT_KIND
};

struct Armed {
  bool on = false;
  int function = -1;
  const void* caller = nullptr;  // nullptr: any caller
  uint64_t occurrence = 0, seen = 0;
  VkResult result = VK_SUCCESS;
};

struct SiteCount {
  uint64_t calls = 0, first = 0;
};

struct State {
  std::mutex mutex;
  uint64_t calls = 0;
  std::map<std::pair<int, const void*>, SiteCount> sites;
  Armed armed;
  bool fired = false;
  std::string fired_at;
  bool installed = false;
};

State& state() {
  static State* s = new State();  // never destroyed: wrappers may run during static destruction
  return *s;
}

struct Decision {
  bool inject = false;
  VkResult result = VK_SUCCESS;
};

Decision decide(int function, const void* caller) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  SiteCount& c = s.sites[{function, caller}];
  ++s.calls;
  if (c.calls++ == 0) c.first = s.calls;
  Armed& a = s.armed;
  if (!a.on || a.function != function || (a.caller && a.caller != caller)) return {};
  if (++a.seen < a.occurrence) return {};
  a.on = false;
  s.fired = true;
  s.fired_at = std::string(functions()[(size_t)function].name) + " -> " + gpu::vk_result_name(a.result);
  return {true, a.result};
}

PFN_vkDeviceWaitIdle g_real_device_wait_idle = nullptr;

// A lost device has finished (or abandoned) all its work: the real one finishes it first, so that
// the objects the runtime destroys after the loss are idle, as the specification lets it assume.
void settle_one(VkDevice d) {
  if (d && g_real_device_wait_idle) g_real_device_wait_idle(d);
}
void settle_one(VkQueue q) {
  if (q && vkQueueWaitIdle) vkQueueWaitIdle(q);
}
template <class T>
void settle_one(T) {}
template <class T, class... Rest>
void settle(T first, Rest...) {
  settle_one(first);
}

template <int I, class Fn>
struct Wrapper;
template <int I, class... A>
struct Wrapper<I, VkResult(VKAPI_PTR*)(A...)> {
  static inline VkResult(VKAPI_PTR* real)(A...) = nullptr;
  static VkResult VKAPI_CALL call(A... a) {
    const Decision d = decide(I, __builtin_return_address(0));
    if (!d.inject) return real(a...);
    if (d.result == VK_ERROR_DEVICE_LOST) settle(a...);
    if (kKinds[I] == Kind::end) real(a...);
    return d.result;
  }
};

void wrap_all() {
#define RFA_FAULT_WRAP(name, kind, ...)                         \
  if (name && !Wrapper<i_##name, PFN_##name>::real) {           \
    Wrapper<i_##name, PFN_##name>::real = name;                 \
    name = &Wrapper<i_##name, PFN_##name>::call;                \
  }
  RFA_FAULT_FUNCTIONS(RFA_FAULT_WRAP)
#undef RFA_FAULT_WRAP
  g_real_device_wait_idle = Wrapper<i_vkDeviceWaitIdle, PFN_vkDeviceWaitIdle>::real;
}

// (One push_back per error: GCC 12 misreads a vector built from a one-element list, -Warray-bounds.)
template <class... E>
std::vector<VkResult> error_list(E... e) {
  std::vector<VkResult> v;
  (v.push_back(e), ...);
  return v;
}

}  // namespace

const std::vector<Function>& functions() {
  static const std::vector<Function> list = {
#define RFA_FAULT_ENTRY(name, kind, ...) Function{#name, error_list(__VA_ARGS__)},
      RFA_FAULT_FUNCTIONS(RFA_FAULT_ENTRY)
#undef RFA_FAULT_ENTRY
  };
  return list;
}

int function_index(const std::string& name) {
  const auto& f = functions();
  for (size_t i = 0; i < f.size(); ++i)
    if (name == f[i].name) return (int)i;
  return -1;
}

Status install() {
  hold_vulkan_driver_loaded();  // (hold_driver.hpp: LeakSanitizer's view of the driver)
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.installed) return Status::Ok();
  }
  // Every pointer is filled once per process; later contexts reuse them (gpu/vk_loader.hpp).
  RFA_TRY(gpu::load_vulkan_functions(VK_NULL_HANDLE));
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.installed) wrap_all();
  s.installed = true;
  return Status::Ok();
}

bool installed() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.installed;
}

void reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls = 0;
  s.sites.clear();
  s.armed = {};
  s.fired = false;
  s.fired_at.clear();
}

uint64_t calls() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.calls;
}

std::vector<Site> sites() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<Site> out;
  for (const auto& [key, c] : s.sites)
    if (c.calls) out.push_back({key.first, key.second, c.calls, c.first});
  std::sort(out.begin(), out.end(), [](const Site& a, const Site& b) { return a.first < b.first; });
  return out;
}

std::string describe(const Site& site) {
  std::string name = functions()[(size_t)site.function].name;
  // The call instruction is just before the return address.
  void* pc = (void*)((const char*)site.caller - 1);
#if !defined(_WIN32)
  if (__sanitizer_symbolize_pc) {
    char buf[512] = {};
    __sanitizer_symbolize_pc(pc, "%f %s:%l", buf, sizeof buf);
    std::string where = buf;
    // Keep the file's name only: the tree's absolute path says nothing here.
    const size_t space = where.rfind(' '), slash = where.rfind('/');
    if (space != std::string::npos && slash != std::string::npos && slash > space) where.erase(space + 1, slash - space);
    if (!where.empty()) return name + " from " + where;
  }
  Dl_info info{};
  if (dladdr(pc, &info) && info.dli_fname) {
    const char* base = std::strrchr(info.dli_fname, '/');
    char off[32];
    std::snprintf(off, sizeof off, "+0x%zx", (size_t)((const char*)pc - (const char*)info.dli_fbase));
    return name + " from " + (base ? base + 1 : info.dli_fname) + off;
  }
#endif
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", pc);
  return name + " from " + addr;
}

void arm(int function, const void* caller, uint64_t occurrence, VkResult result) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.armed = {true, function, caller, std::max<uint64_t>(occurrence, 1), 0, result};
  s.fired = false;
  s.fired_at.clear();
}

void arm_call(int function, uint64_t nth, VkResult result) { arm(function, nullptr, nth, result); }

void disarm() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.armed = {};
}

bool fired() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.fired;
}

std::string fired_at() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.fired_at;
}

Code expected_code(VkResult result) {
  switch (result) {
    case VK_ERROR_DEVICE_LOST:
      return Code::device_lost;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return Code::out_of_memory;
    default:
      return Code::device_error;
  }
}

}  // namespace rfa::test::faults
