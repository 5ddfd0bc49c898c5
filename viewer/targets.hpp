// Where frames are drawn: an off-screen colour image (headless, screenshots) or a GLFW window's
// swapchain (through Dear ImGui's ImGui_ImplVulkanH helpers). Both record into one command buffer
// per frame and submit on the queue shared with the runtime, under the runtime's queue lock.
#pragma once

#include "vk.hpp"

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "imgui.h"
#include "imgui_impl_vulkan.h"

struct GLFWwindow;

namespace viewer {

using RecordPass = std::function<void(VkCommandBuffer cb)>;  // records inside the render pass

class OffscreenTarget {
 public:
  bool create(VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue, std::mutex* queue_mutex,
              uint32_t width, uint32_t height);
  void destroy();
  VkRenderPass render_pass() const { return pass_; }
  uint32_t width() const { return w_; }
  uint32_t height() const { return h_; }
  // Records `pre` (outside the render pass: uploads), then the pass, submits and waits.
  bool frame(const RecordPass& pre, const RecordPass& pass);
  // Copies the last frame to the host: RGBA8 rows, top first.
  bool read_pixels(std::vector<uint8_t>& rgba);

 private:
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice dev_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex* qm_ = nullptr;
  uint32_t w_ = 0, h_ = 0;
  VkImage image_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE, rb_memory_ = VK_NULL_HANDLE;
  VkBuffer readback_ = VK_NULL_HANDLE;
  VkImageView view_ = VK_NULL_HANDLE;
  VkRenderPass pass_ = VK_NULL_HANDLE;
  VkFramebuffer fb_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

class WindowTarget {
 public:
  bool create(VkInstance inst, VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue,
              std::mutex* queue_mutex, GLFWwindow* window);
  void destroy();
  VkRenderPass render_pass() const { return wd_.RenderPass; }
  uint32_t min_image_count() const { return min_images_; }
  uint32_t image_count() const { return wd_.ImageCount; }
  // Acquires, records, submits and presents one frame; rebuilds the swapchain when it is stale.
  bool frame(const RecordPass& pre, const RecordPass& pass);
  // The first command buffer, for one-time uploads (fonts) before the first frame.
  bool submit_once(const std::function<void(VkCommandBuffer)>& record);

 private:
  void rebuild();
  VkInstance inst_ = VK_NULL_HANDLE;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice dev_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex* qm_ = nullptr;
  GLFWwindow* window_ = nullptr;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  ImGui_ImplVulkanH_Window wd_;
  uint32_t min_images_ = 2;
  bool stale_ = false;
};

}  // namespace viewer
