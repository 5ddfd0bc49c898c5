#include "gpu/pipeline.hpp"

#include "gpu/context.hpp"
#include "gpu/shader_registry.hpp"
#include "gpu/vk_check.hpp"

namespace rfa::gpu {

PipelineCache::PipelineCache(Context& ctx) : ctx_(ctx) {
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (vkCreatePipelineCache(ctx_.device(), &ci, nullptr, &vk_cache_) != VK_SUCCESS) vk_cache_ = VK_NULL_HANDLE;
}

PipelineCache::~PipelineCache() {
  VkDevice dev = ctx_.device();
  for (auto& [key, p] : pipelines_) {
    if (p->pipeline) vkDestroyPipeline(dev, p->pipeline, nullptr);
    if (p->layout) vkDestroyPipelineLayout(dev, p->layout, nullptr);
    if (p->set_layout) vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
  }
  for (auto& [name, m] : modules_) vkDestroyShaderModule(dev, m.module, nullptr);
  if (vk_cache_) vkDestroyPipelineCache(dev, vk_cache_, nullptr);
}

size_t PipelineCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

Result<PipelineCache::Module> PipelineCache::load_module(const char* shader) {
  if (auto it = modules_.find(shader); it != modules_.end()) return it->second;
  const ShaderBinary* bin = find_shader(shader);
  if (!bin) return Status(Code::unsupported, std::string("no compiled shader named '") + shader + "' in this build");
  auto iface = reflect_shader(bin->words, bin->count, shader);
  if (!iface) return iface.status();
  Module m;
  m.interface = *iface;
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = bin->count * sizeof(uint32_t);
  mi.pCode = bin->words;
  VK_TRY(vkCreateShaderModule(ctx_.device(), &mi, nullptr, &m.module));
  modules_[shader] = m;
  return m;
}

Result<const Pipeline*> PipelineCache::get_sized(const char* shader, uint32_t push_bytes, const SpecConstants& spec) {
  std::string key = shader;  // appended piece by piece: GCC 12's -Wrestrict misfires on "|" + to_string(v)
  key += '|';
  key += std::to_string(push_bytes);
  for (uint32_t v : spec.values()) {
    key += '|';
    key += std::to_string(v);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return (const Pipeline*)it->second.get();

  auto mod = load_module(shader);
  if (!mod) return mod.status();
  const VkShaderModule module = mod->module;
  const uint32_t bindings = mod->interface.bindings;
  // The host struct and the shader's block must agree byte for byte: Recorder::dispatch copies
  // push_bytes from the struct, and a shorter struct would leave members undefined.
  if (push_bytes != mod->interface.push_bytes)
    return Status(Code::invalid_argument, std::string("shader ") + shader + ": the caller's push constant struct is " +
                                              std::to_string(push_bytes) + " bytes, the shader's push block " +
                                              std::to_string(mod->interface.push_bytes));
  if (push_bytes > ctx_.caps().max_push_constants)
    return Status(Code::unsupported, std::string("shader ") + shader + " needs " + std::to_string(push_bytes) +
                                         " bytes of push constants; the device allows " +
                                         std::to_string(ctx_.caps().max_push_constants));
  VkDevice dev = ctx_.device();

  auto p = std::make_unique<Pipeline>();
  p->shader = shader;
  p->bindings = bindings;
  p->push_bytes = push_bytes;
  p->push_descriptors = ctx_.caps().push_descriptors;
  p->spec = spec.values();
  p->statistics = ctx_.capture_statistics();

  std::vector<VkDescriptorSetLayoutBinding> lb(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    lb[i] = {};
    lb[i].binding = i;
    lb[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    lb[i].descriptorCount = 1;
    lb[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  if (p->push_descriptors) li.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  li.bindingCount = bindings;
  li.pBindings = lb.data();
  VK_TRY(vkCreateDescriptorSetLayout(dev, &li, nullptr, &p->set_layout));

  VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &p->set_layout;
  pli.pushConstantRangeCount = push_bytes ? 1 : 0;
  pli.pPushConstantRanges = push_bytes ? &pr : nullptr;
  VkResult r = vkCreatePipelineLayout(dev, &pli, nullptr, &p->layout);
  if (r != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    return vk_status(r, "vkCreatePipelineLayout", __FILE__, __LINE__);
  }

  const auto& values = spec.values();
  std::vector<VkSpecializationMapEntry> entries(values.size());
  for (uint32_t i = 0; i < values.size(); ++i) entries[i] = {i, i * 4u, 4u};
  VkSpecializationInfo si{(uint32_t)entries.size(), entries.data(), values.size() * 4, values.data()};

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = values.empty() ? nullptr : &si;
  ci.layout = p->layout;
  if (p->statistics) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  r = vkCreateComputePipelines(dev, vk_cache_, 1, &ci, nullptr, &p->pipeline);
  if (r != VK_SUCCESS) {
    vkDestroyPipelineLayout(dev, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    return ctx_.note(vk_status(r, "vkCreateComputePipelines", __FILE__, __LINE__));
  }
  const Pipeline* out = p.get();
  pipelines_[key] = std::move(p);
  return out;
}

}  // namespace rfa::gpu
