#include "gpu/vk_loader.hpp"

#include <mutex>

#include "gpu/vk_check.hpp"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace rfa::gpu {
namespace {

std::mutex g_mutex;
bool g_global_loaded = false;    // volkInitializeCustom done
bool g_instance_loaded = false;  // volkLoadInstance done

PFN_vkGetInstanceProcAddr symbol_of(const std::string& name, std::string* why) {
#if defined(_WIN32)
  HMODULE module = LoadLibraryA(name.c_str());
  if (!module) return nullptr;
  // The module stays loaded for the life of the process: the function pointers point into it.
  auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      reinterpret_cast<void (*)(void)>(GetProcAddress(module, "vkGetInstanceProcAddr")));
#else
  void* module = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) return nullptr;
  auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(module, "vkGetInstanceProcAddr"));
#endif
  if (!gipa) *why = name + " loads but has no vkGetInstanceProcAddr: it is not a Vulkan loader";
  return gipa;
}

}  // namespace

const std::vector<std::string>& vulkan_loader_names() {
#if defined(_WIN32)
  static const std::vector<std::string> names{"vulkan-1.dll"};
#elif defined(__APPLE__)
  static const std::vector<std::string> names{"libvulkan.dylib", "libvulkan.1.dylib", "libMoltenVK.dylib"};
#else
  static const std::vector<std::string> names{"libvulkan.so.1", "libvulkan.so"};
#endif
  return names;
}

Status open_vulkan_library(const std::vector<std::string>& names, PFN_vkGetInstanceProcAddr* out) {
  std::string tried;
  for (const std::string& name : names) {
    std::string why;
    if (PFN_vkGetInstanceProcAddr gipa = symbol_of(name, &why)) {
      *out = gipa;
      return Status::Ok();
    }
    if (!why.empty()) return Status(Code::device_error, "no Vulkan loader: " + why);
    tried += (tried.empty() ? "" : " / ") + name;
  }
  return Status(Code::device_error,
                "no Vulkan loader: " + tried +
                    " not found; install the Vulkan loader and a driver (Debian: libvulkan1 and "
                    "mesa-vulkan-drivers; Windows: a GPU driver, which installs vulkan-1.dll)");
}

Status load_vulkan(PFN_vkGetInstanceProcAddr app_gipa) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_global_loaded) {
    if (app_gipa) {
      // Same loader <=> same trampoline for a global function.
      auto create = reinterpret_cast<PFN_vkCreateInstance>(app_gipa(VK_NULL_HANDLE, "vkCreateInstance"));
      if (create != vkCreateInstance)
        return Status(Code::invalid_argument,
                      "adopt: AdoptedDevice::get_instance_proc_addr belongs to another Vulkan loader than "
                      "the one this process's runtime already uses (one loader per process)");
    }
    return Status::Ok();
  }
  PFN_vkGetInstanceProcAddr gipa = app_gipa;
  if (!gipa) RFA_TRY(open_vulkan_library(vulkan_loader_names(), &gipa));
  volkInitializeCustom(gipa);
  if (!vkCreateInstance || !vkEnumerateInstanceExtensionProperties)
    return Status(Code::device_error, "the Vulkan loader's vkGetInstanceProcAddr returned no vkCreateInstance");
  g_global_loaded = true;
  return Status::Ok();
}

Status load_vulkan_functions(VkInstance instance) {
  RFA_TRY(load_vulkan());
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_instance_loaded) return Status::Ok();
  if (instance) {
    volkLoadInstance(instance);
  } else {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "rfa-vk";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkInstance tmp = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&ci, nullptr, &tmp);
    if (r != VK_SUCCESS)
      return Status(Code::device_error, std::string("no Vulkan driver found (vkCreateInstance: ") + vk_result_name(r) +
                                            "); install one, e.g. Debian's mesa-vulkan-drivers");
    // The core functions are the loader's trampolines, valid beyond this instance's life.
    volkLoadInstance(tmp);
    vkDestroyInstance(tmp, nullptr);
  }
  if (!vkCreateDevice || !vkCmdDispatch)
    return Status(Code::device_error, "the Vulkan loader returned no vkCreateDevice / vkCmdDispatch");
  g_instance_loaded = true;
  return Status::Ok();
}

}  // namespace rfa::gpu
