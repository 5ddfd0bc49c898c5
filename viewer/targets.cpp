#include "targets.hpp"

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include <cstring>

namespace viewer {
namespace {

int memory_type(VkPhysicalDevice phys, uint32_t bits, VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(phys, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return (int)i;
  return -1;
}

bool submit(VkQueue queue, std::mutex* qm, const VkSubmitInfo& si, VkFence fence) {
  std::lock_guard<std::mutex> lock(*qm);
  return vkQueueSubmit(queue, 1, &si, fence) == VK_SUCCESS;
}

}  // namespace

// ---- off-screen --------------------------------------------------------------------------------

bool OffscreenTarget::create(VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue,
                             std::mutex* queue_mutex, uint32_t width, uint32_t height) {
  phys_ = phys;
  dev_ = dev;
  queue_ = queue;
  qm_ = queue_mutex;
  w_ = width;
  h_ = height;
  VkImageCreateInfo ii{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ii.imageType = VK_IMAGE_TYPE_2D;
  ii.format = VK_FORMAT_R8G8B8A8_UNORM;
  ii.extent = {w_, h_, 1};
  ii.mipLevels = ii.arrayLayers = 1;
  ii.samples = VK_SAMPLE_COUNT_1_BIT;
  ii.tiling = VK_IMAGE_TILING_OPTIMAL;
  ii.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  if (vkCreateImage(dev, &ii, nullptr, &image_) != VK_SUCCESS) return false;
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(dev, image_, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  int t = memory_type(phys, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (t < 0) t = memory_type(phys, req.memoryTypeBits, 0);
  ai.memoryTypeIndex = (uint32_t)t;
  if (vkAllocateMemory(dev, &ai, nullptr, &memory_) != VK_SUCCESS) return false;
  vkBindImageMemory(dev, image_, memory_, 0);
  VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vi.image = image_;
  vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vi.format = ii.format;
  vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  if (vkCreateImageView(dev, &vi, nullptr, &view_) != VK_SUCCESS) return false;

  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = (VkDeviceSize)w_ * h_ * 4;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (vkCreateBuffer(dev, &bi, nullptr, &readback_) != VK_SUCCESS) return false;
  vkGetBufferMemoryRequirements(dev, readback_, &req);
  ai.allocationSize = req.size;
  t = memory_type(phys, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (t < 0) return false;
  ai.memoryTypeIndex = (uint32_t)t;
  if (vkAllocateMemory(dev, &ai, nullptr, &rb_memory_) != VK_SUCCESS) return false;
  vkBindBufferMemory(dev, readback_, rb_memory_, 0);

  VkAttachmentDescription att{};
  att.format = ii.format;
  att.samples = VK_SAMPLE_COUNT_1_BIT;
  att.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  att.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  att.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  att.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  att.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  att.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkSubpassDescription sub{};
  sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  sub.colorAttachmentCount = 1;
  sub.pColorAttachments = &ref;
  VkSubpassDependency deps[2] = {};
  // The previous frame's read-back copy, then this frame's colour writes.
  deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
  deps[0].dstSubpass = 0;
  deps[0].srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
  deps[0].srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  // Colour writes, then a read-back copy.
  deps[1].srcSubpass = 0;
  deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
  deps[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
  deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  VkRenderPassCreateInfo rp{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
  rp.attachmentCount = 1;
  rp.pAttachments = &att;
  rp.subpassCount = 1;
  rp.pSubpasses = &sub;
  rp.dependencyCount = 2;
  rp.pDependencies = deps;
  if (vkCreateRenderPass(dev, &rp, nullptr, &pass_) != VK_SUCCESS) return false;
  VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
  fi.renderPass = pass_;
  fi.attachmentCount = 1;
  fi.pAttachments = &view_;
  fi.width = w_;
  fi.height = h_;
  fi.layers = 1;
  if (vkCreateFramebuffer(dev, &fi, nullptr, &fb_) != VK_SUCCESS) return false;
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = family;
  if (vkCreateCommandPool(dev, &pi, nullptr, &pool_) != VK_SUCCESS) return false;
  VkCommandBufferAllocateInfo ci{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ci.commandPool = pool_;
  ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ci.commandBufferCount = 1;
  if (vkAllocateCommandBuffers(dev, &ci, &cb_) != VK_SUCCESS) return false;
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  return vkCreateFence(dev, &fci, nullptr, &fence_) == VK_SUCCESS;
}

void OffscreenTarget::destroy() {
  if (!dev_) return;
  vkDeviceWaitIdle(dev_);
  if (fence_) vkDestroyFence(dev_, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(dev_, pool_, nullptr);
  if (fb_) vkDestroyFramebuffer(dev_, fb_, nullptr);
  if (pass_) vkDestroyRenderPass(dev_, pass_, nullptr);
  if (view_) vkDestroyImageView(dev_, view_, nullptr);
  if (image_) vkDestroyImage(dev_, image_, nullptr);
  if (memory_) vkFreeMemory(dev_, memory_, nullptr);
  if (readback_) vkDestroyBuffer(dev_, readback_, nullptr);
  if (rb_memory_) vkFreeMemory(dev_, rb_memory_, nullptr);
  dev_ = VK_NULL_HANDLE;
}

bool OffscreenTarget::frame(const RecordPass& pre, const RecordPass& pass) {
  vkResetCommandBuffer(cb_, 0);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cb_, &bi);
  if (pre) pre(cb_);
  if (pass) {
    VkClearValue clear{};
    clear.color = {{0.06f, 0.06f, 0.07f, 1.0f}};
    VkRenderPassBeginInfo rb{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    rb.renderPass = pass_;
    rb.framebuffer = fb_;
    rb.renderArea.extent = {w_, h_};
    rb.clearValueCount = 1;
    rb.pClearValues = &clear;
    vkCmdBeginRenderPass(cb_, &rb, VK_SUBPASS_CONTENTS_INLINE);
    pass(cb_);
    vkCmdEndRenderPass(cb_);
  }
  vkEndCommandBuffer(cb_);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb_;
  if (!submit(queue_, qm_, si, fence_)) return false;
  vkWaitForFences(dev_, 1, &fence_, VK_TRUE, UINT64_MAX);
  vkResetFences(dev_, 1, &fence_);
  return true;
}

bool OffscreenTarget::read_pixels(std::vector<uint8_t>& rgba) {
  bool ok = frame(
      [&](VkCommandBuffer cb) {
        VkBufferImageCopy c{};
        c.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        c.imageExtent = {w_, h_, 1};
        vkCmdCopyImageToBuffer(cb, image_, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback_, 1, &c);
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
      },
      nullptr);
  if (!ok) return false;
  void* p = nullptr;
  if (vkMapMemory(dev_, rb_memory_, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) return false;
  rgba.resize((size_t)w_ * h_ * 4);
  std::memcpy(rgba.data(), p, rgba.size());
  vkUnmapMemory(dev_, rb_memory_);
  return true;
}

// ---- window ------------------------------------------------------------------------------------

bool WindowTarget::create(VkInstance inst, VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue,
                          std::mutex* queue_mutex, GLFWwindow* window) {
  inst_ = inst;
  phys_ = phys;
  dev_ = dev;
  family_ = family;
  queue_ = queue;
  qm_ = queue_mutex;
  window_ = window;
  if (glfwCreateWindowSurface(inst, window, nullptr, &surface_) != VK_SUCCESS) return false;
  VkBool32 ok = VK_FALSE;
  vkGetPhysicalDeviceSurfaceSupportKHR(phys, family, surface_, &ok);
  if (!ok) return false;
  wd_.Surface = surface_;
  const VkFormat formats[] = {VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_UNORM};
  wd_.SurfaceFormat = ImGui_ImplVulkanH_SelectSurfaceFormat(phys, surface_, formats, 2, VK_COLORSPACE_SRGB_NONLINEAR_KHR);
  VkPresentModeKHR modes[] = {VK_PRESENT_MODE_FIFO_KHR};
  wd_.PresentMode = ImGui_ImplVulkanH_SelectPresentMode(phys, surface_, modes, 1);
  wd_.ClearEnable = true;
  wd_.ClearValue.color = {{0.06f, 0.06f, 0.07f, 1.0f}};
  rebuild();
  return wd_.Swapchain != VK_NULL_HANDLE;
}

void WindowTarget::rebuild() {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  if (w <= 0 || h <= 0) return;
  vkDeviceWaitIdle(dev_);
  ImGui_ImplVulkanH_CreateOrResizeWindow(inst_, phys_, dev_, &wd_, family_, nullptr, w, h, min_images_);
  wd_.FrameIndex = 0;
  stale_ = false;
}

void WindowTarget::destroy() {
  if (!dev_) return;
  vkDeviceWaitIdle(dev_);
  ImGui_ImplVulkanH_DestroyWindow(inst_, dev_, &wd_, nullptr);  // also destroys the surface
  dev_ = VK_NULL_HANDLE;
}

bool WindowTarget::submit_once(const std::function<void(VkCommandBuffer)>& record) {
  ImGui_ImplVulkanH_Frame& fd = wd_.Frames[0];
  vkResetCommandPool(dev_, fd.CommandPool, 0);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(fd.CommandBuffer, &bi);
  record(fd.CommandBuffer);
  vkEndCommandBuffer(fd.CommandBuffer);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &fd.CommandBuffer;
  if (!submit(queue_, qm_, si, VK_NULL_HANDLE)) return false;
  std::lock_guard<std::mutex> lock(*qm_);
  return vkQueueWaitIdle(queue_) == VK_SUCCESS;
}

bool WindowTarget::frame(const RecordPass& pre, const RecordPass& pass) {
  if (stale_) rebuild();
  if (wd_.Swapchain == VK_NULL_HANDLE) return true;  // minimised
  VkSemaphore acquired = wd_.FrameSemaphores[wd_.SemaphoreIndex].ImageAcquiredSemaphore;
  VkSemaphore rendered = wd_.FrameSemaphores[wd_.SemaphoreIndex].RenderCompleteSemaphore;
  VkResult r = vkAcquireNextImageKHR(dev_, wd_.Swapchain, UINT64_MAX, acquired, VK_NULL_HANDLE, &wd_.FrameIndex);
  if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) {
    stale_ = true;
    if (r == VK_ERROR_OUT_OF_DATE_KHR) return true;
  } else if (r != VK_SUCCESS) {
    return false;
  }
  ImGui_ImplVulkanH_Frame& fd = wd_.Frames[wd_.FrameIndex];
  vkWaitForFences(dev_, 1, &fd.Fence, VK_TRUE, UINT64_MAX);
  vkResetFences(dev_, 1, &fd.Fence);
  vkResetCommandPool(dev_, fd.CommandPool, 0);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(fd.CommandBuffer, &bi);
  if (pre) pre(fd.CommandBuffer);
  VkRenderPassBeginInfo rb{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rb.renderPass = wd_.RenderPass;
  rb.framebuffer = fd.Framebuffer;
  rb.renderArea.extent = {(uint32_t)wd_.Width, (uint32_t)wd_.Height};
  rb.clearValueCount = 1;
  rb.pClearValues = &wd_.ClearValue;
  vkCmdBeginRenderPass(fd.CommandBuffer, &rb, VK_SUBPASS_CONTENTS_INLINE);
  if (pass) pass(fd.CommandBuffer);
  vkCmdEndRenderPass(fd.CommandBuffer);
  vkEndCommandBuffer(fd.CommandBuffer);
  VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &acquired;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &fd.CommandBuffer;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &rendered;
  if (!submit(queue_, qm_, si, fd.Fence)) return false;
  VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  pi.waitSemaphoreCount = 1;
  pi.pWaitSemaphores = &rendered;
  pi.swapchainCount = 1;
  pi.pSwapchains = &wd_.Swapchain;
  pi.pImageIndices = &wd_.FrameIndex;
  {
    std::lock_guard<std::mutex> lock(*qm_);
    r = vkQueuePresentKHR(queue_, &pi);
  }
  if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) stale_ = true;
  else if (r != VK_SUCCESS) return false;
  wd_.SemaphoreIndex = (wd_.SemaphoreIndex + 1) % wd_.ImageCount;
  return true;
}

}  // namespace viewer
