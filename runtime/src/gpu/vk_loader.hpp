// Opening the Vulkan loader at run time (librfa does not link it): libvulkan.so.1 on Linux,
// vulkan-1.dll on Windows, libvulkan.dylib / libMoltenVK.dylib on macOS, or the
// vkGetInstanceProcAddr an app hands over with AdoptedDevice. One loader per process: the
// function pointers (volk's, gpu/vk.hpp) are the loader's trampolines, which dispatch on the
// handle they are given and so serve every instance and device of that loader alike.
#pragma once

#include <string>
#include <vector>

#include "gpu/vk.hpp"
#include "rfa/status.hpp"

namespace rfa::gpu {

// The file names tried, in order, on this platform.
const std::vector<std::string>& vulkan_loader_names();

// Opens the first of `names` that loads and returns its vkGetInstanceProcAddr; the error names
// every file tried ("no Vulkan loader: libvulkan.so.1 / libvulkan.so not found ...").
Status open_vulkan_library(const std::vector<std::string>& names, PFN_vkGetInstanceProcAddr* out);

// The global functions (vkCreateInstance, vkEnumerateInstance*), once per process: from `app_gipa`
// when given, else from the loader library. A later call with an app_gipa of another loader than
// the one in use is refused (the process-wide pointers cannot serve two loaders).
Status load_vulkan(PFN_vkGetInstanceProcAddr app_gipa = nullptr);

// The instance- and device-level functions, once per process, through `instance`; with
// VK_NULL_HANDLE through a short-lived instance of the runtime's own (for helpers that are given
// only a VkPhysicalDevice of an app's instance). Calls load_vulkan() first.
Status load_vulkan_functions(VkInstance instance);

}  // namespace rfa::gpu
