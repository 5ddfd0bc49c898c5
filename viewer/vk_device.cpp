#include "vk_device.hpp"

#include "rfa/device.hpp"
#include "rfa/environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace viewer {
namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* s = static_cast<VkSetup*>(user);
  if (sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    s->messages.fetch_add(1);
    std::fprintf(stderr, "rfa-viewer: vulkan %s: %s\n",
                 sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
                 data && data->pMessage ? data->pMessage : "");
  }
  return VK_FALSE;
}

std::string lower(std::string s) {
  for (char& c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

}  // namespace

bool VkSetup::create(const std::vector<const char*>& instance_exts, int validation, bool swapchain,
                     bool (*present_check)(VkInstance, VkPhysicalDevice, uint32_t), std::string* error) {
  // The loader is opened here, at run time (viewer/vk_volk.c): the viewer links none, as librfa.
  if (volkInitialize() != VK_SUCCESS) {
    *error = "no Vulkan loader: libvulkan.so.1 / vulkan-1.dll not found; install the Vulkan loader and a driver "
             "(Debian: libvulkan1 and mesa-vulkan-drivers; Windows: a GPU driver, which installs vulkan-1.dll)";
    return false;
  }
  if (validation < 0) validation = rfa::environment_flag("RFA_VALIDATION");
  std::vector<const char*> layers, exts(instance_exts);
  if (validation) {
    if (!rfa::instance_has_layer("VK_LAYER_KHRONOS_validation")) {
      *error = "validation requested but VK_LAYER_KHRONOS_validation is not installed (vulkan-validationlayers)";
      return false;
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "rfa-viewer";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  // MoltenVK is only enumerated to an instance with portability enumeration (docs/device-profiles.md).
  if (rfa::instance_has_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    exts.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = (uint32_t)layers.size();
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = (uint32_t)exts.size();
  ci.ppEnabledExtensionNames = exts.data();
  if (vkCreateInstance(&ci, nullptr, &instance) != VK_SUCCESS) {
    *error = "vkCreateInstance failed (is a Vulkan driver installed? Debian: mesa-vulkan-drivers)";
    return false;
  }
  volkLoadInstance(instance);  // one device: the instance's pointers serve it (the loader dispatches)
  if (validation) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_message;
    mi.pUserData = this;
    auto fn = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
    if (fn) fn(instance, &mi, nullptr, &messenger);
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devs(n);
  vkEnumeratePhysicalDevices(instance, &n, devs.data());
  const std::string want_device = rfa::environment_variable("RFA_DEVICE");
  const char* want = want_device.empty() ? nullptr : want_device.c_str();
  int best = -1, best_rank = -1, best_family = -1;
  for (uint32_t d = 0; d < n; ++d) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[d], &p);
    if (want && *want && lower(p.deviceName).find(lower(want)) == std::string::npos && std::to_string(d) != want)
      continue;
    if (swapchain && !rfa::device_has_extension(devs[d], VK_KHR_SWAPCHAIN_EXTENSION_NAME)) continue;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(devs[d], &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(devs[d], &nq, qf.data());
    int fam = -1;
    for (uint32_t f = 0; f < nq && fam < 0; ++f) {
      const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
      if ((qf[f].queueFlags & need) != need) continue;
      if (present_check && !present_check(instance, devs[d], f)) continue;
      fam = (int)f;
    }
    if (fam < 0) continue;
    if (rfa::device_type_rank(p.deviceType) > best_rank) {
      best_rank = rfa::device_type_rank(p.deviceType);
      best = (int)d;
      best_family = fam;
    }
  }
  if (best < 0) {
    *error = "no Vulkan device with a graphics+compute queue" + std::string(swapchain ? " that can present" : "") +
             (want ? std::string(" matching RFA_DEVICE=") + want : "");
    return false;
  }
  phys = devs[(size_t)best];
  family = (uint32_t)best_family;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys, &props);
  device_name = props.deviceName;

  std::vector<const char*> dexts;
  if (swapchain) dexts.push_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
  for (const char* e : rfa::wanted_device_extensions(phys)) dexts.push_back(e);
  for (const char* e : dexts) device_extensions.emplace_back(e);
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = (uint32_t)dexts.size();
  di.ppEnabledExtensionNames = dexts.data();
  if (vkCreateDevice(phys, &di, nullptr, &device) != VK_SUCCESS) {
    *error = "vkCreateDevice failed on " + device_name;
    return false;
  }
  vkGetDeviceQueue(device, family, 0, &queue);
  return true;
}

void VkSetup::destroy() {
  if (device) vkDestroyDevice(device, nullptr);
  device = VK_NULL_HANDLE;
  if (messenger) {
    auto fn = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
    if (fn) fn(instance, messenger, nullptr);
    messenger = VK_NULL_HANDLE;
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  instance = VK_NULL_HANDLE;
}

}  // namespace viewer
