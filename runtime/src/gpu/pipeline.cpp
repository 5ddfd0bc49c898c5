#include "gpu/pipeline.hpp"

#include <algorithm>

#include "gpu/context.hpp"
#include "gpu/shader_registry.hpp"
#include "gpu/vk_check.hpp"

namespace rfa::gpu {

std::string profile_note(const Capabilities& c) {
  return c.profile.empty() ? std::string() : ", device profile " + c.profile;
}

Status check_bindings(const Capabilities& c, const char* shader, uint32_t bindings) {
  if (bindings > c.max_storage_buffers_per_stage)
    return Status(Code::unsupported, std::string("shader ") + shader + " binds " + std::to_string(bindings) +
                                         " storage buffers; the device allows " +
                                         std::to_string(c.max_storage_buffers_per_stage) +
                                         " per stage (maxPerStageDescriptorStorageBuffers" + profile_note(c) + ")");
  if (bindings > c.max_storage_buffers_per_set)
    return Status(Code::unsupported, std::string("shader ") + shader + " binds " + std::to_string(bindings) +
                                         " storage buffers; the device allows " +
                                         std::to_string(c.max_storage_buffers_per_set) +
                                         " per set (maxDescriptorSetStorageBuffers" + profile_note(c) + ")");
  return Status::Ok();
}

namespace {
// The device feature a SPIR-V capability needs, or nullptr when the device has it (a capability
// every Vulkan 1.1 compute device has, or an optional one this device has enabled). `known` is
// false for a capability this table does not list: refused too, so that a kernel built with a new
// extension cannot reach a driver that was never asked to enable what it declares (the
// VulkanMemoryModel that glslang adds to every cooperative-matrix module went unchecked before).
const char* missing_feature(const Capabilities& c, uint32_t cap, bool& known) {
  known = true;
  auto ops = [&](VkSubgroupFeatureFlags bit, const char* name) { return (c.subgroup_ops & bit) ? nullptr : name; };
  switch (cap) {
    case spv_cap::Matrix: case spv_cap::Shader: return nullptr;  // every Vulkan device
    case spv_cap::Float16: return c.shader_float16 ? nullptr : "shaderFloat16";
    case spv_cap::Float64: return c.shader_float64 ? nullptr : "shaderFloat64";
    case spv_cap::Int64: return c.shader_int64 ? nullptr : "shaderInt64";
    case spv_cap::StorageBuffer16BitAccess: return c.storage_16bit ? nullptr : "storageBuffer16BitAccess";
    case spv_cap::GroupNonUniform: return ops(VK_SUBGROUP_FEATURE_BASIC_BIT, "subgroup basic operations");
    case spv_cap::GroupNonUniformVote: return ops(VK_SUBGROUP_FEATURE_VOTE_BIT, "subgroup vote");
    case spv_cap::GroupNonUniformArithmetic: return ops(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "subgroup arithmetic");
    case spv_cap::GroupNonUniformBallot: return ops(VK_SUBGROUP_FEATURE_BALLOT_BIT, "subgroup ballot");
    case spv_cap::GroupNonUniformShuffle: return ops(VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "subgroup shuffle");
    case spv_cap::GroupNonUniformShuffleRelative:
      return ops(VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "subgroup relative shuffle");
    case spv_cap::GroupNonUniformClustered: return ops(VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "subgroup clustered operations");
    case spv_cap::GroupNonUniformQuad: return ops(VK_SUBGROUP_FEATURE_QUAD_BIT, "subgroup quad operations");
    case spv_cap::VulkanMemoryModel: return c.vulkan_memory_model ? nullptr : "vulkanMemoryModel";
    case spv_cap::VulkanMemoryModelDeviceScope:
      return c.vulkan_memory_model_device_scope ? nullptr : "vulkanMemoryModelDeviceScope";
    case spv_cap::CooperativeMatrixNV: return c.coopmat_nv ? nullptr : "VK_NV_cooperative_matrix";
    case spv_cap::CooperativeMatrixKHR: return c.coopmat_khr() ? nullptr : "VK_KHR_cooperative_matrix";
    case spv_cap::CooperativeMatrixReductionsNV: case spv_cap::CooperativeMatrixConversionsNV:
    case spv_cap::CooperativeMatrixPerElementOperationsNV:
      return c.coopmat_nv2 ? nullptr : "VK_NV_cooperative_matrix2";
    default: known = false; return nullptr;
  }
}

// Likewise for an OpExtension: the device extension (or feature) it needs.
const char* missing_extension(const Capabilities& c, const std::string& e, bool& known) {
  known = true;
  if (e == "SPV_KHR_storage_buffer_storage_class") return nullptr;  // core in Vulkan 1.1
  if (e == "SPV_KHR_16bit_storage") return c.storage_16bit ? nullptr : "VK_KHR_16bit_storage";
  if (e == "SPV_KHR_vulkan_memory_model") return c.vulkan_memory_model ? nullptr : "VK_KHR_vulkan_memory_model";
  if (e == "SPV_NV_cooperative_matrix") return c.coopmat_nv ? nullptr : "VK_NV_cooperative_matrix";
  if (e == "SPV_KHR_cooperative_matrix") return c.coopmat_khr() ? nullptr : "VK_KHR_cooperative_matrix";
  if (e == "SPV_NV_cooperative_matrix2") return c.coopmat_nv2 ? nullptr : "VK_NV_cooperative_matrix2";
  known = false;
  return nullptr;
}
}  // namespace

Status check_capabilities(const Capabilities& c, const char* shader, const std::vector<uint32_t>& capabilities,
                          const std::vector<std::string>& extensions) {
  auto refuse = [&](const std::string& what, const std::string& limit) {
    return Status(Code::unsupported, std::string("shader ") + shader + " " + what + " (" + limit + profile_note(c) + ")");
  };
  for (uint32_t cap : capabilities) {
    bool known = true;
    if (const char* missing = missing_feature(c, cap, known))
      return refuse(std::string("uses ") + missing + ", which the device lacks or the context did not enable", missing);
    if (!known)
      return refuse("declares SPIR-V capability " + std::to_string(cap) + ", which the runtime does not check",
                    "gpu/pipeline.cpp missing_feature");
  }
  for (const std::string& e : extensions) {
    bool known = true;
    if (const char* missing = missing_extension(c, e, known))
      return refuse("uses " + e + ", which needs " + missing + " (absent or not enabled)", missing);
    if (!known) return refuse("uses SPIR-V extension " + e + ", which the runtime does not check", "gpu/pipeline.cpp");
  }
  return Status::Ok();
}

Status check_footprint(const Capabilities& c, const char* shader, const ShaderFootprint& f) {
  auto refuse = [&](const std::string& what, const char* limit) {
    return Status(Code::unsupported, std::string("shader ") + shader + " " + what + " (" + limit + profile_note(c) + ")");
  };
  for (int k = 0; k < 3; ++k)
    if (f.local_size[k] > c.max_workgroup_size[k])
      return refuse("has a workgroup of " + std::to_string(f.local_size[k]) + " in dimension " + std::to_string(k) +
                        "; the device allows " + std::to_string(c.max_workgroup_size[k]),
                    "maxComputeWorkGroupSize");
  if (f.invocations() > c.max_workgroup_invocations)
    return refuse("has " + std::to_string(f.invocations()) + " invocations per workgroup; the device allows " +
                      std::to_string(c.max_workgroup_invocations),
                  "maxComputeWorkGroupInvocations");
  if (f.shared_bytes > c.max_shared_memory)
    return refuse("needs " + std::to_string(f.shared_bytes) + " bytes of shared memory; the device allows " +
                      std::to_string(c.max_shared_memory),
                  "maxComputeSharedMemorySize");
  if (f.spirv_version > c.spirv_version) {
    auto spirv = [](uint32_t v) { return std::to_string((v >> 16) & 0xff) + "." + std::to_string((v >> 8) & 0xff); };
    auto api = [](uint32_t v) {
      return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v));
    };
    return refuse("is SPIR-V " + spirv(f.spirv_version) + "; the device takes up to " + spirv(c.spirv_version) +
                      " (Vulkan " + api(std::min(c.api_version, c.instance_api_version)) + ": the lower of the instance's " +
                      api(c.instance_api_version) + " and the device's " + api(c.api_version) + ")",
                  "the API version");
  }
  if (f.local_size_id && !c.maintenance4)
    return refuse("gives its workgroup size by LocalSizeId, which needs maintenance4 (absent or not enabled)",
                  "maintenance4");
  if (f.numbers_subgroup_lanes && subgroup_layout_size(c, f.invocations()) == 0)
    return refuse("numbers its threads by subgroup lanes, and the device cannot run its " +
                      std::to_string(f.invocations()) +
                      "-thread workgroup as full subgroups of a required size (subgroup size " +
                      std::to_string(c.subgroup_size) + ", " + std::to_string(c.min_subgroup_size) + " to " +
                      std::to_string(c.max_subgroup_size) + ")",
                  "subgroupSizeControl, computeFullSubgroups, requiredSubgroupSizeStages");
  return check_capabilities(c, shader, f.capabilities, f.extensions);
}

uint32_t most_storage_buffers() {
  static const uint32_t most = [] {
    uint32_t m = 0;
    const std::string suffix = kPackedSuffix;
    for (const ShaderBinary* s = all_shaders(); s->name; ++s) {
      const std::string name = s->name;
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) continue;
      auto iface = reflect_shader(s->words, s->count, s->name);
      if (iface) m = std::max(m, iface->bindings);
    }
    return m;
  }();
  return most;
}

namespace {

// The packed variant a shader with `bindings` storage buffers runs on this device, or nullptr
// when it runs as written (or has no packed variant: then check_bindings refuses it).
const ShaderBinary* packed_variant(const Capabilities& c, const char* shader, uint32_t bindings) {
  if (!c.packed_bindings || bindings <= c.max_storage_buffers_per_stage || bindings > kPackedMaxSlots) return nullptr;
  return find_shader((std::string(shader) + kPackedSuffix).c_str());
}

// A packed kernel binds one storage buffer (the arena) and one uniform buffer (its offset table).
Status check_packed_bindings(const Capabilities& c, const char* shader) {
  if (c.max_uniform_buffers_per_stage < 1)
    return Status(Code::unsupported, std::string("shader ") + shader +
                                         " needs one uniform buffer for its packed bindings; the device allows none "
                                         "(maxPerStageDescriptorUniformBuffers" + profile_note(c) + ")");
  return check_bindings(c, shader, 1);
}

}  // namespace

Status check_shader_interface(const Capabilities& c, const char* shader) {
  const ShaderBinary* plain = find_shader(shader);
  if (!plain) return Status(Code::unsupported, std::string("no compiled shader named '") + shader + "' in this build");
  auto iface = reflect_shader(plain->words, plain->count, shader);
  if (!iface) return iface.status();
  const ShaderBinary* packed = packed_variant(c, shader, iface->bindings);
  const ShaderBinary* bin = packed ? packed : plain;
  if (iface->push_bytes > c.max_push_constants)
    return Status(Code::unsupported, std::string("shader ") + shader + " needs " + std::to_string(iface->push_bytes) +
                                         " bytes of push constants; the device allows " +
                                         std::to_string(c.max_push_constants) + " (maxPushConstantsSize" +
                                         profile_note(c) + ")");
  RFA_TRY(packed ? check_packed_bindings(c, shader) : check_bindings(c, shader, iface->bindings));
  // The SPIR-V capabilities do not depend on specialization (workgroup size and shared memory do,
  // and are checked when the pipeline is created).
  auto fp = shader_footprint(bin->words, bin->count, shader, {});
  if (!fp) return fp.status();
  return check_capabilities(c, shader, fp->capabilities, fp->extensions);
}

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
  if (spec.missing() >= 0)
    return make_error(Code::invalid_argument, std::string(shader) + ": specialization constant id " +
                                                  std::to_string(spec.missing()) + " not given (the vector sets ids up to " +
                                                  std::to_string(spec.values().size() - 1) + ")");
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
  VkShaderModule module = mod->module;
  const uint32_t bindings = mod->interface.bindings;
  // Packed bindings: the same kernel from its packed variant (same push block and spec constants).
  const ShaderBinary* packed = packed_variant(ctx_.caps(), shader, bindings);
  const std::string packed_name = std::string(shader) + kPackedSuffix;
  if (packed) {
    auto pm = load_module(packed_name.c_str());
    if (!pm) return pm.status();
    if (pm->interface.push_bytes != mod->interface.push_bytes || pm->interface.bindings != 2)
      return Status(Code::device_error, "shader " + packed_name + " does not match " + shader +
                                        " (a push block of " + std::to_string(pm->interface.push_bytes) + " bytes, " +
                                        std::to_string(pm->interface.bindings) + " bindings)");
    module = pm->module;
  }
  // The host struct and the shader's block must agree byte for byte: Recorder::dispatch copies
  // push_bytes from the struct, and a shorter struct would leave members undefined.
  if (push_bytes != mod->interface.push_bytes)
    return Status(Code::invalid_argument, std::string("shader ") + shader + ": the caller's push constant struct is " +
                                              std::to_string(push_bytes) + " bytes, the shader's push block " +
                                              std::to_string(mod->interface.push_bytes));
  if (push_bytes > ctx_.caps().max_push_constants)
    return Status(Code::unsupported, std::string("shader ") + shader + " needs " + std::to_string(push_bytes) +
                                         " bytes of push constants; the device allows " +
                                         std::to_string(ctx_.caps().max_push_constants) + " (maxPushConstantsSize" +
                                         profile_note(ctx_.caps()) + ")");
  RFA_TRY(packed ? check_packed_bindings(ctx_.caps(), shader) : check_bindings(ctx_.caps(), shader, bindings));
  // The specialized kernel against the device's limits: a chooser that picked a tile or workgroup
  // the (profile-intersected) limits do not allow fails here, loudly, before the driver sees it.
  uint32_t lane_size = 0;  // the required subgroup size of a kernel that numbers subgroup lanes
  {
    const ShaderBinary* bin = packed ? packed : find_shader(shader);
    auto fp = shader_footprint(bin->words, bin->count, shader, spec.values());
    if (!fp) return fp.status();
    RFA_TRY(check_footprint(ctx_.caps(), shader, *fp));
    if (fp->numbers_subgroup_lanes) lane_size = subgroup_layout_size(ctx_.caps(), fp->invocations());
  }
  VkDevice dev = ctx_.device();

  auto p = std::make_unique<Pipeline>();
  p->shader = shader;
  p->bindings = bindings;
  p->packed = packed != nullptr;
  p->push_bytes = push_bytes;
  p->push_descriptors = ctx_.caps().push_descriptors;
  p->spec = spec.values();
  p->statistics = ctx_.capture_statistics();

  const uint32_t layout_bindings = p->packed ? 2 : bindings;
  std::vector<VkDescriptorSetLayoutBinding> lb(layout_bindings);
  for (uint32_t i = 0; i < layout_bindings; ++i) {
    lb[i] = {};
    lb[i].binding = i;
    lb[i].descriptorType = p->packed && i == 1 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    lb[i].descriptorCount = 1;
    lb[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  if (p->push_descriptors) li.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  li.bindingCount = layout_bindings;
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
  // A kernel that numbers its threads by subgroup lanes runs as full subgroups of the size its
  // layout was chosen for (check_footprint refused it above where the device cannot).
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT required{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT};
  if (lane_size != 0) {
    required.requiredSubgroupSize = lane_size;
    ci.stage.pNext = &required;
    ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  }
  p->subgroup_size = lane_size;
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
