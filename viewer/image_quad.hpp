// Draws heatmap images inside ImGui windows. Dear ImGui 1.86's Vulkan backend binds only its font
// texture (no user textures), so an image is drawn by a draw-list callback that binds our own
// small pipeline (quad.vert/quad.frag) and descriptor set, followed by ImGui's reset callback.
#pragma once

#include "vk.hpp"

#include <deque>
#include <map>

#include "imgui.h"

namespace viewer {

class ImageQuads {
 public:
  bool init(VkDevice device, VkRenderPass render_pass, VkDescriptorPool pool);
  void destroy();
  // A descriptor set for a sampled image view (cached per view).
  VkDescriptorSet set_for(VkImageView view);
  // Adds the image over [p0, p1) (screen pixels) of the current window's draw list, sampling uv0..uv1.
  void image(VkImageView view, ImVec2 p0, ImVec2 p1, ImVec2 uv0 = {0, 0}, ImVec2 uv1 = {1, 1});
  // Before ImGui_ImplVulkan_RenderDrawData: the command buffer and framebuffer size the callbacks use.
  void begin_render(VkCommandBuffer cb, float fb_width, float fb_height);
  // After the command buffer was recorded: forget this frame's draws.
  void end_frame() { draws_.clear(); }

 private:
  struct Draw {
    ImageQuads* self;
    VkDescriptorSet set;
    float rect[4], uv[4];
  };
  static void callback(const ImDrawList* list, const ImDrawCmd* cmd);

  VkDevice device_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkSampler sampler_ = VK_NULL_HANDLE;
  std::map<VkImageView, VkDescriptorSet> sets_;
  std::deque<Draw> draws_;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  float fb_[2] = {1, 1};
};

}  // namespace viewer
