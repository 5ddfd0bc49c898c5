// Everything the runtime needs to know about a physical device, probed once.
// Kernel variants are chosen from this struct and the problem shape, never from ad-hoc queries.
#pragma once

#include "gpu/vk.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::gpu {

struct MemoryHeapInfo {
  uint64_t size = 0;
  bool device_local = false;
};

struct MemoryTypeInfo {
  VkMemoryPropertyFlags flags = 0;
  uint32_t heap = 0;
};

struct Capabilities {
  uint32_t api_version = 0;
  uint32_t vendor_id = 0, device_id = 0, driver_version = 0;
  VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::string device_name, driver_name, driver_info;

  uint32_t subgroup_size = 1;               // the default (VkPhysicalDeviceSubgroupProperties)
  VkSubgroupFeatureFlags subgroup_ops = 0;  // in compute shaders
  bool subgroup_arithmetic() const { return (subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0; }
  // Subgroup size control (VK_EXT_subgroup_size_control, core in 1.3): the sizes a compute shader
  // may run at (Intel: 8 to 32, AMD: 32 or 64, NVIDIA and lavapipe: one size) and whether a compute
  // pipeline can be created with full subgroups of a required size (subgroupSizeControl,
  // computeFullSubgroups and compute among requiredSubgroupSizeStages; enabled by the context).
  // Kernels that number their threads by subgroup lanes run only with it (gpu::subgroup_layout_size):
  // without, a driver may run a shader narrower than subgroup_size, or with subgroups part full.
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;  // 0: not reported (taken as subgroup_size)
  uint32_t max_workgroup_subgroups = 0;                   // maxComputeWorkgroupSubgroups
  bool subgroup_size_control = false;

  // Compute units (NVIDIA SMs through VK_NV_shader_sm_builtins, AMD CUs through
  // VK_AMD_shader_core_properties; 0 where the device names none): split-k aims at two workgroups
  // each (KernelOptions::attention_split_cores), else at a device-class default.
  uint32_t compute_units = 0;
  uint32_t max_shared_memory = 16384;        // maxComputeSharedMemorySize
  uint32_t max_workgroup_invocations = 128;  // maxComputeWorkGroupInvocations
  uint32_t max_workgroup_size[3] = {128, 1, 1};
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint32_t max_push_constants = 128;
  uint32_t max_storage_buffers_per_stage = 4;  // maxPerStageDescriptorStorageBuffers
  uint32_t max_storage_buffers_per_set = 24;   // maxDescriptorSetStorageBuffers
  uint64_t max_storage_buffer_range = 1u << 27;
  uint64_t storage_buffer_alignment = 256;  // minStorageBufferOffsetAlignment
  uint32_t max_uniform_buffers_per_stage = 12;  // maxPerStageDescriptorUniformBuffers
  uint64_t uniform_buffer_alignment = 256;      // minUniformBufferOffsetAlignment
  // Packed bindings (docs/device-profiles.md): the device allows fewer storage buffers per stage
  // than some kernel binds, so every tensor lives in one arena buffer (gpu::Allocator) and such a
  // kernel runs its `<name>_packed` variant, which reads each tensor through binding 0 at the
  // offset a uniform table (binding 1) gives. Set by the context; `packed_arena_bytes` is the
  // arena's size (at most maxStorageBufferRange: one descriptor covers all of it).
  bool packed_bindings = false;
  uint64_t packed_arena_bytes = 0;
  uint64_t non_coherent_atom = 256;

  bool storage_16bit = false;   // storageBuffer16BitAccess
  bool shader_float16 = false;  // shaderFloat16 (VK_KHR_shader_float16_int8 / 1.2)
  bool shader_float64 = false;
  bool shader_int64 = false;
  bool push_descriptors = false;  // VK_KHR_push_descriptor
  // VK_NV_cooperative_matrix in compute shaders with a subgroup-scope 16 x 16 x 16 shape of fp16
  // A/B and fp32 C/D (what the attention tile's *_tile_cm kernels use), and shaderFloat16.
  bool coopmat_nv = false;
  // VK_KHR_cooperative_matrix in compute with a square subgroup-scope shape of fp16 A/B and fp32
  // C/result (the *_tile_ck kernels): coopmat_khr_block is its side, 16 where the device lists
  // 16 x 16 x 16 (GPUs), else 8 where it lists 8 x 8 x 8 (lavapipe), else 0. Needs the Vulkan memory
  // model (the SPIR-V of GL_KHR_cooperative_matrix declares it) and shaderFloat16.
  uint32_t coopmat_khr_block = 0;
  bool coopmat_khr() const { return coopmat_khr_block != 0; }
  // VK_NV_cooperative_matrix2 with its reductions, conversions and per-element operations
  // (cooperativeMatrixReductions, cooperativeMatrixConversions, cooperativeMatrixPerElementOperations:
  // the *_tile_pe kernels, on the KHR shape above), enabled by the context. Its SPIR-V is 1.6, so it
  // counts only where spirv_version reaches 1.6. NVIDIA (driver 550+) and lavapipe (Mesa 25+) have it.
  bool coopmat_nv2 = false;
  // maintenance4 (core in Vulkan 1.3, enabled by the context there): SPIR-V 1.6 modules give their
  // workgroup size by LocalSizeId, which needs it.
  bool maintenance4 = false;
  // The highest SPIR-V version a module may have on this device: 1.3 under Vulkan 1.1, 1.5 under
  // 1.2, 1.6 under 1.3, of the lower of the instance's API version (the context asks for up to 1.3)
  // and the device's (gpu::check_footprint refuses a newer module, naming both).
  uint32_t spirv_version = 0x10300;
  uint32_t instance_api_version = VK_API_VERSION_1_1;
  // The Vulkan memory model (VK_KHR_vulkan_memory_model's vulkanMemoryModel, core in 1.2), enabled
  // by the context where present: modules compiled with cooperative matrices declare it.
  bool vulkan_memory_model = false;
  bool vulkan_memory_model_device_scope = false;
  // VK_KHR_pipeline_executable_properties with its pipelineExecutableInfo feature: per-pipeline
  // driver statistics (gpu/pipeline_stats.hpp), enabled only on request.
  bool pipeline_executable_info = false;

  bool timestamps = false;        // timestampComputeAndGraphics and valid bits on the compute queue
  double timestamp_period_ns = 1.0;
  uint32_t timestamp_valid_bits = 0;

  // VK_KHR_portability_subset is exposed (MoltenVK and other layered drivers): the spec requires
  // enabling it, and the device may lack features a conformant one has (docs/device-profiles.md).
  bool portability_subset = false;
  // The device profile applied on top of the probed values ("" none): gpu/device_profiles.hpp.
  std::string profile;

  // Paths the kernel check (ContextOptions::verify_kernels, ops/attention_check.hpp) saw fail on
  // this device: the chooser never takes them. The features of failed kernels are cleared above
  // (matrices, clustered operations, shuffles); these are the choices that are not features.
  bool refuse_tile = false, refuse_split_k = false, refuse_staged_keys = false, refuse_f16_math = false;
  std::vector<std::string> kernel_refusals;  // one line per failed path: kernel, error, what was refused

  std::vector<MemoryHeapInfo> heaps;
  std::vector<MemoryTypeInfo> memory_types;
  uint64_t device_local_bytes = 0;
  bool unified_memory = false;  // tensors live in host-mapped device memory: choose_unified_memory()

  std::string type_name() const;
  std::string api_string() const;  // "1.3.230"
};

// Whether tensors should live in device memory the host maps directly. Only where device memory
// is the host's own (integrated GPUs, CPU devices) and a device-local type is host-visible and
// coherent. A discrete GPU keeps tensors in plain device-local memory even when resizable BAR makes
// all of it host-visible: the CPU reads that memory across PCIe, uncached (~0.4 GB/s measured on
// an H100), so results come back through a small host-cached buffer instead. Pure: tested on
// faked structs.
bool choose_unified_memory(const Capabilities& c);

// The subgroup size at which a kernel that numbers its threads by subgroup lanes (gl_SubgroupID *
// gl_SubgroupSize + gl_SubgroupInvocationID: the attention kernels' *_sg, *_sx and matrix layouts)
// runs a workgroup of `workgroup` threads as whole, full subgroups: the pipeline is then created
// with VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT and this required size (the
// pipeline layer does so for every such kernel). The device's default size, within its
// [min, max]; 0 where the device cannot require a size in compute, or the workgroup is not whole
// subgroups of it (or more than maxComputeWorkgroupSubgroups of them). Pure: tested on faked structs.
uint32_t subgroup_layout_size(const Capabilities& c, uint32_t workgroup);
// The size subgroup_layout_size asks for, whatever the workgroup: the device's default subgroup
// size within its [min, max] (a layout sizes its workgroup from it: the per-element matrix tile).
uint32_t required_subgroup_size(const Capabilities& c);

// Fills the struct from a physical device (queries only; creates nothing). `instance_api_version`
// is the apiVersion the instance was created with (it bounds the SPIR-V the device takes).
Capabilities probe_capabilities(VkInstance instance, VkPhysicalDevice phys, uint32_t queue_family,
                                uint32_t instance_api_version = VK_API_VERSION_1_1);

// The highest SPIR-V version (0x00010600 for 1.6) of a Vulkan API version.
uint32_t spirv_version_of(uint32_t api_version);

const char* device_type_name(VkPhysicalDeviceType t);

// Device choice order: discrete 4 > integrated 3 > virtual 2 > cpu 1 > other 0.
int device_type_rank(VkPhysicalDeviceType t);

// Small queries shared by the runtime and apps that create their own device (the viewer).
bool instance_has_layer(const char* name);
bool instance_has_extension(const char* name);
bool device_has_extension(VkPhysicalDevice phys, const char* name);
// The same, with a failed enumeration reported (the context's own checks: a layer or extension
// "absent" because the call failed would be a wrong diagnosis).
Status instance_layer_present(const char* name, bool* has);
Status instance_extension_present(const char* name, bool* has);
Status device_extension_present(VkPhysicalDevice phys, const char* name, bool* has);

}  // namespace rfa::gpu
