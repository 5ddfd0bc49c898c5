#include "gpu/capabilities.hpp"
#include "gpu/vk_check.hpp"
#include "gpu/vk_khr_coopmat.hpp"
#include "gpu/vk_loader.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace rfa::gpu {

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string Capabilities::type_name() const { return device_type_name(device_type); }

std::string Capabilities::api_string() const {
  return std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(api_version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(api_version));
}

int device_type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

namespace {
// Whether `list` (a Vulkan enumeration's two calls) names `name`; a failed call is reported,
// never read as "absent" (a validation layer "not installed" because the loader ran out of memory).
template <class Props, class Enumerate, class NameOf>
Status listed(const char* what, Enumerate enumerate, NameOf name_of, const char* name, bool* has) {
  *has = false;
  uint32_t n = 0;
  VkResult r = enumerate(&n, nullptr);
  std::vector<Props> props(n);
  if (r == VK_SUCCESS && n) r = enumerate(&n, props.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_status(r, what, __FILE__, __LINE__);
  props.resize(std::min<size_t>(n, props.size()));
  for (const Props& p : props)
    if (std::strcmp(name_of(p), name) == 0) *has = true;
  return Status::Ok();
}
}  // namespace

Status instance_layer_present(const char* name, bool* has) {
  RFA_TRY(load_vulkan());
  return listed<VkLayerProperties>(
      "vkEnumerateInstanceLayerProperties", [](uint32_t* n, VkLayerProperties* p) { return vkEnumerateInstanceLayerProperties(n, p); },
      [](const VkLayerProperties& p) { return p.layerName; }, name, has);
}

Status instance_extension_present(const char* name, bool* has) {
  RFA_TRY(load_vulkan());
  return listed<VkExtensionProperties>(
      "vkEnumerateInstanceExtensionProperties",
      [](uint32_t* n, VkExtensionProperties* p) { return vkEnumerateInstanceExtensionProperties(nullptr, n, p); },
      [](const VkExtensionProperties& p) { return p.extensionName; }, name, has);
}

Status device_extension_present(VkPhysicalDevice phys, const char* name, bool* has) {
  // An app may ask about its own device before the runtime has an instance of its own.
  RFA_TRY(load_vulkan_functions(VK_NULL_HANDLE));
  return listed<VkExtensionProperties>(
      "vkEnumerateDeviceExtensionProperties",
      [phys](uint32_t* n, VkExtensionProperties* p) { return vkEnumerateDeviceExtensionProperties(phys, nullptr, n, p); },
      [](const VkExtensionProperties& p) { return p.extensionName; }, name, has);
}

// No loader, or a failed enumeration: absent (the probes' view; the context's own checks use the
// Status forms above).
bool instance_has_layer(const char* name) {
  bool has = false;
  return instance_layer_present(name, &has).ok() && has;
}
bool instance_has_extension(const char* name) {
  bool has = false;
  return instance_extension_present(name, &has).ok() && has;
}
bool device_has_extension(VkPhysicalDevice phys, const char* name) {
  bool has = false;
  return device_extension_present(phys, name, &has).ok() && has;
}

namespace {
// The matrix extension's feature on, and compute among its stages (NV and KHR name them alike).
template <class Features, class Properties>
bool matrices_in_compute(VkPhysicalDevice phys, Features f, Properties cp) {
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f;
  vkGetPhysicalDeviceFeatures2(phys, &feats);
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &cp;
  vkGetPhysicalDeviceProperties2(phys, &props);
  return f.cooperativeMatrix && (cp.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
}

// Whether the device runs the attention tile's cooperative-matrix kernels: the extension, its
// feature, compute support and the 16 x 16 x 16 fp16 x fp16 + fp32 shape at subgroup scope.
bool probe_coopmat_nv(VkInstance instance, VkPhysicalDevice phys) {
  if (!device_has_extension(phys, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return false;
  if (!matrices_in_compute(
          phys, VkPhysicalDeviceCooperativeMatrixFeaturesNV{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV},
          VkPhysicalDeviceCooperativeMatrixPropertiesNV{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV}))
    return false;
  // An instance-level entry point of a device extension: through the loader by name.
  auto list = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
      instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  if (!list) return false;
  uint32_t n = 0;
  if (list(phys, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (list(phys, &n, shapes.data()) != VK_SUCCESS) return false;
  for (const auto& m : shapes)
    if (m.MSize == 16 && m.NSize == 16 && m.KSize == 16 && m.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        m.BType == VK_COMPONENT_TYPE_FLOAT16_NV && m.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        m.DType == VK_COMPONENT_TYPE_FLOAT32_NV && m.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  return false;
}
// VK_NV_cooperative_matrix2 with the three features the *_tile_pe kernels declare.
bool probe_coopmat_nv2(VkPhysicalDevice phys) {
  if (!device_has_extension(phys, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)) return false;
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  return f.cooperativeMatrixReductions && f.cooperativeMatrixConversions && f.cooperativeMatrixPerElementOperations;
}
// The side of the square subgroup-scope VK_KHR_cooperative_matrix shape of fp16 A/B and fp32 C and
// result that the attention tile's *_tile_ck kernels can use: 16 where listed, else 8, else 0.
uint32_t probe_coopmat_khr(VkInstance instance, VkPhysicalDevice phys) {
  if (!device_has_extension(phys, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) return 0;
  if (!matrices_in_compute(
          phys, VkPhysicalDeviceCooperativeMatrixFeaturesKHR{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR},
          VkPhysicalDeviceCooperativeMatrixPropertiesKHR{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR}))
    return 0;
  auto list = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
      instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  if (!list) return 0;
  uint32_t n = 0;
  if (list(phys, &n, nullptr) != VK_SUCCESS || n == 0) return 0;
  std::vector<VkCooperativeMatrixPropertiesKHR> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  if (list(phys, &n, shapes.data()) != VK_SUCCESS) return 0;
  uint32_t best = 0;
  for (const auto& m : shapes)
    if (m.MSize == m.NSize && m.NSize == m.KSize && (m.MSize == 16 || m.MSize == 8) &&
        m.AType == VK_COMPONENT_TYPE_FLOAT16_NV && m.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        m.CType == VK_COMPONENT_TYPE_FLOAT32_NV && m.ResultType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        !m.saturatingAccumulation && m.scope == VK_SCOPE_SUBGROUP_NV)
      best = std::max(best, m.MSize);
  return best;
}
}  // namespace

uint32_t required_subgroup_size(const Capabilities& c) {
  const uint32_t lo = c.min_subgroup_size ? c.min_subgroup_size : c.subgroup_size;
  const uint32_t hi = c.max_subgroup_size ? c.max_subgroup_size : c.subgroup_size;
  return std::clamp(c.subgroup_size, lo, std::max(lo, hi));
}

uint32_t subgroup_layout_size(const Capabilities& c, uint32_t workgroup) {
  if (!c.subgroup_size_control || workgroup == 0) return 0;
  const uint32_t size = required_subgroup_size(c);
  if (size == 0 || (size & (size - 1)) != 0 || workgroup % size != 0) return 0;
  if (c.max_workgroup_subgroups != 0 && workgroup / size > c.max_workgroup_subgroups) return 0;
  return size;
}

uint32_t spirv_version_of(uint32_t api_version) {
  const uint32_t minor = VK_API_VERSION_MAJOR(api_version) > 1 ? 3 : VK_API_VERSION_MINOR(api_version);
  return minor >= 3 ? 0x10600 : minor == 2 ? 0x10500 : 0x10300;
}

Capabilities probe_capabilities(VkInstance instance, VkPhysicalDevice phys, uint32_t queue_family,
                                uint32_t instance_api_version) {
  Capabilities c;

  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  bool has_driver_props = device_has_extension(phys, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  VkPhysicalDeviceProperties base;
  vkGetPhysicalDeviceProperties(phys, &base);
  if (has_driver_props || base.apiVersion >= VK_API_VERSION_1_2) subgroup.pNext = &driver;
  vkGetPhysicalDeviceProperties2(phys, &props2);
  const VkPhysicalDeviceProperties& p = props2.properties;

  c.api_version = p.apiVersion;
  c.instance_api_version = instance_api_version;
  c.spirv_version = spirv_version_of(std::min(p.apiVersion, instance_api_version));
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.driver_version = p.driverVersion;
  c.device_type = p.deviceType;
  c.device_name = p.deviceName;
  if (subgroup.pNext) {
    c.driver_name = driver.driverName;
    c.driver_info = driver.driverInfo;
  }
  if (c.driver_name.empty()) c.driver_name = "driver " + std::to_string(p.driverVersion);

  c.subgroup_size = subgroup.subgroupSize ? subgroup.subgroupSize : 1;
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) c.subgroup_ops = subgroup.supportedOperations;
  // Subgroup size control through the extension (the instance asks for Vulkan 1.1, so the 1.3 core
  // feature is reached through it too).
  if (device_has_extension(phys, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME)) {
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &sp;
    vkGetPhysicalDeviceProperties2(phys, &p2);
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &sf;
    vkGetPhysicalDeviceFeatures2(phys, &f2);
    c.min_subgroup_size = sp.minSubgroupSize;
    c.max_subgroup_size = sp.maxSubgroupSize;
    c.max_workgroup_subgroups = sp.maxComputeWorkgroupSubgroups;
    c.subgroup_size_control = sf.subgroupSizeControl && sf.computeFullSubgroups &&
                              (sp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  }

  const VkPhysicalDeviceLimits& l = p.limits;
  c.max_shared_memory = l.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
  }
  c.max_push_constants = l.maxPushConstantsSize;
  c.max_storage_buffers_per_stage = l.maxPerStageDescriptorStorageBuffers;
  c.max_storage_buffers_per_set = l.maxDescriptorSetStorageBuffers;
  c.max_storage_buffer_range = l.maxStorageBufferRange;
  c.storage_buffer_alignment = l.minStorageBufferOffsetAlignment;
  c.max_uniform_buffers_per_stage = l.maxPerStageDescriptorUniformBuffers;
  c.uniform_buffer_alignment = l.minUniformBufferOffsetAlignment;
  c.non_coherent_atom = l.nonCoherentAtomSize;
  c.timestamp_period_ns = l.timestampPeriod;

  VkPhysicalDevice16BitStorageFeatures f16storage{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16arith{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f16storage;
  // The instance asks for Vulkan 1.1, so fp16 arithmetic is enabled through the extension (not
  // as a 1.2 core feature): only a device that lists it counts.
  if (device_has_extension(phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) f16storage.pNext = &f16arith;
  vkGetPhysicalDeviceFeatures2(phys, &feats);
  c.storage_16bit = f16storage.storageBuffer16BitAccess;
  c.shader_float16 = f16storage.pNext ? f16arith.shaderFloat16 : false;
  c.shader_float64 = feats.features.shaderFloat64;
  c.shader_int64 = feats.features.shaderInt64;
  c.portability_subset = device_has_extension(phys, "VK_KHR_portability_subset");
  c.push_descriptors = device_has_extension(phys, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (device_has_extension(phys, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) {
    VkPhysicalDeviceVulkanMemoryModelFeaturesKHR mm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 mf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    mf.pNext = &mm;
    vkGetPhysicalDeviceFeatures2(phys, &mf);
    c.vulkan_memory_model = mm.vulkanMemoryModel == VK_TRUE;
    c.vulkan_memory_model_device_scope = c.vulkan_memory_model && mm.vulkanMemoryModelDeviceScope == VK_TRUE;
  }
  // The matrix kernels' SPIR-V declares the Vulkan memory model (glslang emits it with either
  // extension), so neither counts without it.
  c.coopmat_nv = c.shader_float16 && c.vulkan_memory_model && probe_coopmat_nv(instance, phys);
  c.coopmat_khr_block = c.shader_float16 && c.vulkan_memory_model ? probe_coopmat_khr(instance, phys) : 0;
  if (c.spirv_version >= 0x10600) {  // a Vulkan 1.3 device and instance: the core feature struct
    VkPhysicalDeviceMaintenance4Features m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
    VkPhysicalDeviceFeatures2 mf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    mf.pNext = &m4;
    vkGetPhysicalDeviceFeatures2(phys, &mf);
    c.maintenance4 = m4.maintenance4 == VK_TRUE;
  }
  c.coopmat_nv2 = c.coopmat_khr() && c.maintenance4 && probe_coopmat_nv2(phys);
  // The device's compute units, where it names them (properties only: nothing to enable).
  if (device_has_extension(phys, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &sm;
    vkGetPhysicalDeviceProperties2(phys, &p2);
    c.compute_units = sm.shaderSMCount;
  } else if (device_has_extension(phys, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD cu{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &cu;
    vkGetPhysicalDeviceProperties2(phys, &p2);
    c.compute_units = cu.shaderEngineCount * cu.shaderArraysPerEngineCount * cu.computeUnitsPerShaderArray;
  }
  if (device_has_extension(phys, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 pf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    pf.pNext = &pe;
    vkGetPhysicalDeviceFeatures2(phys, &pf);
    c.pipeline_executable_info = pe.pipelineExecutableInfo == VK_TRUE;
  }

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  if (queue_family < nq) c.timestamp_valid_bits = qf[queue_family].timestampValidBits;
  c.timestamps = l.timestampComputeAndGraphics && c.timestamp_valid_bits > 0 && l.timestampPeriod > 0;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(phys, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    MemoryHeapInfo h;
    h.size = mem.memoryHeaps[i].size;
    h.device_local = (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    if (h.device_local) c.device_local_bytes += h.size;
    c.heaps.push_back(h);
  }
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
    c.memory_types.push_back({mem.memoryTypes[i].propertyFlags, mem.memoryTypes[i].heapIndex});
  c.unified_memory = choose_unified_memory(c);
  return c;
}

bool choose_unified_memory(const Capabilities& c) {
  if (c.device_type != VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU && c.device_type != VK_PHYSICAL_DEVICE_TYPE_CPU)
    return false;
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (const MemoryTypeInfo& t : c.memory_types)
    if ((t.flags & want) == want) return true;
  return false;
}

}  // namespace rfa::gpu
