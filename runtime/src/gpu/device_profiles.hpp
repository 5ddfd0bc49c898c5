// Device profiles: the limits and features of devices the runtime is not running on, applied on
// top of the one it is (issue 21). The context probes its real device, then keeps the
// intersection with the profile: the smaller of each limit, the larger of each alignment, a
// feature only where both have it. Every chooser, pipeline layout and buffer size then reads the
// intersected Capabilities, so a run on lavapipe shows what a phone or a Mac would refuse or adapt.
//
// The values come from the Khronos Vulkan-Profiles repository's JSON files; each profile names its
// file and docs/device-profiles.md records the commit and how to re-extract them
// (tools/device-profiles/extract_profiles.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/capabilities.hpp"

namespace rfa::gpu {

struct DeviceProfile {
  const char* name;         // the short name: ContextOptions::device_profile, rfa-run --device-profile
  const char* description;  // one line
  const char* source;       // the Vulkan-Profiles file (and profile) the values come from

  uint32_t max_shared_memory;          // maxComputeSharedMemorySize
  uint32_t max_workgroup_invocations;  // maxComputeWorkGroupInvocations
  uint32_t max_workgroup_size[3];      // maxComputeWorkGroupSize
  uint32_t max_workgroup_count[3];     // maxComputeWorkGroupCount
  uint32_t max_push_constants;         // maxPushConstantsSize
  uint32_t max_storage_buffers_per_stage;  // maxPerStageDescriptorStorageBuffers
  uint32_t max_storage_buffers_per_set;    // maxDescriptorSetStorageBuffers
  uint64_t max_storage_buffer_range;       // maxStorageBufferRange
  uint64_t storage_buffer_alignment;       // minStorageBufferOffsetAlignment (a minimum: the larger wins)
  VkSubgroupFeatureFlags subgroup_ops;     // in compute (the profile's supportedOperations)
  bool storage_16bit;     // storageBuffer16BitAccess
  bool shader_float16;    // shaderFloat16 (with VK_KHR_shader_float16_int8)
  bool shader_float64;    // shaderFloat64
  bool shader_int64;      // shaderInt64
  bool timestamps;        // timestampComputeAndGraphics
  bool push_descriptors;  // VK_KHR_push_descriptor
  bool coopmat_nv;        // VK_NV_cooperative_matrix
  bool portability_subset;  // the device is a portability-subset implementation (MoltenVK)
  // Subgroup size control: subgroupSizeControl and computeFullSubgroups with compute among
  // requiredSubgroupSizeStages, and the [min, max] subgroup sizes (0, 0: the profile lists none) and
  // maxComputeWorkgroupSubgroups (0: none listed).
  bool subgroup_size_control;
  uint32_t min_subgroup_size, max_subgroup_size, max_workgroup_subgroups;
  bool vulkan_memory_model;  // vulkanMemoryModel
  bool coopmat_khr;          // VK_KHR_cooperative_matrix
  bool coopmat_nv2;          // VK_NV_cooperative_matrix2 (reductions, conversions, per-element operations)
};

// Every profile, in the order `rfa-run --device-profile list` prints them.
const std::vector<DeviceProfile>& device_profiles();
// nullptr when no profile has that name.
const DeviceProfile* find_device_profile(const std::string& name);
// "android-baseline-2022, vulkan-minimum, ..." for error messages.
std::string device_profile_list();
// The intersection, in place: c becomes what a device with both c's and p's limits allows.
// The subgroup size stays the real device's: it is how the hardware runs the shader, not a limit
// a kernel can be held to (docs/device-profiles.md). The sizes a pipeline may require are the
// ranges' intersection: where it is empty, or the real size lies outside it, no size can be required.
void apply_device_profile(Capabilities& c, const DeviceProfile& p);

}  // namespace rfa::gpu
