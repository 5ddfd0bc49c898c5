// The viewer's own Vulkan instance, device and one graphics+compute queue, later handed to the
// runtime through rfa::Context::adopt so that compute and drawing share the queue.
#pragma once

#include "vk.hpp"

#include <atomic>
#include <string>
#include <vector>

namespace viewer {

struct VkSetup {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::vector<std::string> device_extensions;
  std::string device_name;
  // Warnings and errors the validation layer (or driver) reported; rfa-viewer exits non-zero if any.
  std::atomic<uint64_t> messages{0};

  // instance_exts: what the window system needs (glfwGetRequiredInstanceExtensions), empty headless.
  // validation: -1 follows RFA_VALIDATION. present_check: a queue family must also present (window).
  bool create(const std::vector<const char*>& instance_exts, int validation, bool swapchain,
              bool (*present_check)(VkInstance, VkPhysicalDevice, uint32_t), std::string* error);
  void destroy();
};

}  // namespace viewer
