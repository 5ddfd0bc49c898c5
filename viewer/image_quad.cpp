#include "image_quad.hpp"

#include <algorithm>

#include "quad.frag.h"
#include "quad.vert.h"

namespace viewer {

bool ImageQuads::init(VkDevice device, VkRenderPass render_pass, VkDescriptorPool pool) {
  device_ = device;
  pool_ = pool;
  VkSamplerCreateInfo si{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
  // Nearest: one map cell is one flat colour at any zoom (and pixel tests read exact colours).
  si.magFilter = si.minFilter = VK_FILTER_NEAREST;
  si.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
  si.addressModeU = si.addressModeV = si.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  si.maxLod = 0;
  if (vkCreateSampler(device, &si, nullptr, &sampler_) != VK_SUCCESS) return false;
  VkDescriptorSetLayoutBinding b{0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_FRAGMENT_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = 1;
  li.pBindings = &b;
  if (vkCreateDescriptorSetLayout(device, &li, nullptr, &set_layout_) != VK_SUCCESS) return false;
  VkPushConstantRange pr{VK_SHADER_STAGE_VERTEX_BIT, 0, 40};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout_;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pr;
  if (vkCreatePipelineLayout(device, &pli, nullptr, &layout_) != VK_SUCCESS) return false;

  VkShaderModule mods[2] = {};
  const uint32_t* code[2] = {spv_quad_vert, spv_quad_frag};
  const size_t size[2] = {sizeof(spv_quad_vert), sizeof(spv_quad_frag)};
  for (int i = 0; i < 2; ++i) {
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = size[i];
    mi.pCode = code[i];
    if (vkCreateShaderModule(device, &mi, nullptr, &mods[i]) != VK_SUCCESS) return false;
  }
  VkPipelineShaderStageCreateInfo st[2] = {{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
                                           {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
  st[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  st[0].module = mods[0];
  st[0].pName = "main";
  st[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  st[1].module = mods[1];
  st[1].pName = "main";
  VkPipelineVertexInputStateCreateInfo vi{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP;
  VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  vp.viewportCount = vp.scissorCount = 1;
  VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  rs.polygonMode = VK_POLYGON_MODE_FILL;
  rs.cullMode = VK_CULL_MODE_NONE;
  rs.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineColorBlendAttachmentState att{};
  att.colorWriteMask = 0xf;
  VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  cb.attachmentCount = 1;
  cb.pAttachments = &att;
  VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
  VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
  VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
  dy.dynamicStateCount = 2;
  dy.pDynamicStates = dyn;
  VkGraphicsPipelineCreateInfo gi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  gi.stageCount = 2;
  gi.pStages = st;
  gi.pVertexInputState = &vi;
  gi.pInputAssemblyState = &ia;
  gi.pViewportState = &vp;
  gi.pRasterizationState = &rs;
  gi.pMultisampleState = &ms;
  gi.pDepthStencilState = &ds;
  gi.pColorBlendState = &cb;
  gi.pDynamicState = &dy;
  gi.layout = layout_;
  gi.renderPass = render_pass;
  VkResult r = vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &gi, nullptr, &pipeline_);
  for (VkShaderModule m : mods) vkDestroyShaderModule(device, m, nullptr);
  return r == VK_SUCCESS;
}

void ImageQuads::destroy() {
  if (!device_) return;
  for (auto& [view, set] : sets_) vkFreeDescriptorSets(device_, pool_, 1, &set);
  sets_.clear();
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (sampler_) vkDestroySampler(device_, sampler_, nullptr);
  device_ = VK_NULL_HANDLE;
}

VkDescriptorSet ImageQuads::set_for(VkImageView view) {
  if (auto it = sets_.find(view); it != sets_.end()) return it->second;
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (vkAllocateDescriptorSets(device_, &ai, &set) != VK_SUCCESS) return VK_NULL_HANDLE;
  VkDescriptorImageInfo ii{sampler_, view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
  VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstSet = set;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
  w.pImageInfo = &ii;
  vkUpdateDescriptorSets(device_, 1, &w, 0, nullptr);
  sets_[view] = set;
  return set;
}

void ImageQuads::image(VkImageView view, ImVec2 p0, ImVec2 p1, ImVec2 uv0, ImVec2 uv1) {
  VkDescriptorSet set = set_for(view);
  if (!set) return;
  draws_.push_back({this, set, {p0.x, p0.y, p1.x, p1.y}, {uv0.x, uv0.y, uv1.x, uv1.y}});
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddCallback(&ImageQuads::callback, &draws_.back());
  dl->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void ImageQuads::begin_render(VkCommandBuffer cb, float fb_width, float fb_height) {
  cb_ = cb;
  fb_[0] = fb_width;
  fb_[1] = fb_height;
}

void ImageQuads::callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const Draw& d = *static_cast<const Draw*>(cmd->UserCallbackData);
  ImageQuads& q = *d.self;
  VkCommandBuffer cb = q.cb_;
  const ImVec2 origin = ImGui::GetDrawData()->DisplayPos;
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, q.pipeline_);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, q.layout_, 0, 1, &d.set, 0, nullptr);
  VkViewport vp{0, 0, q.fb_[0], q.fb_[1], 0, 1};
  vkCmdSetViewport(cb, 0, 1, &vp);
  const float x0 = std::clamp(cmd->ClipRect.x - origin.x, 0.0f, q.fb_[0]);
  const float y0 = std::clamp(cmd->ClipRect.y - origin.y, 0.0f, q.fb_[1]);
  const float x1 = std::clamp(cmd->ClipRect.z - origin.x, x0, q.fb_[0]);
  const float y1 = std::clamp(cmd->ClipRect.w - origin.y, y0, q.fb_[1]);
  VkRect2D sc{{(int32_t)x0, (int32_t)y0}, {(uint32_t)(x1 - x0), (uint32_t)(y1 - y0)}};
  vkCmdSetScissor(cb, 0, 1, &sc);
  float push[10] = {d.rect[0] - origin.x, d.rect[1] - origin.y, d.rect[2] - origin.x, d.rect[3] - origin.y,
                    d.uv[0], d.uv[1], d.uv[2], d.uv[3], q.fb_[0], q.fb_[1]};
  vkCmdPushConstants(cb, q.layout_, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, push);
  vkCmdDraw(cb, 4, 1, 0, 0);
}

}  // namespace viewer
