// What a pipeline layout needs to know about a compute shader, read from its SPIR-V words: how
// many storage-buffer bindings it declares and how large its push-constant block is. Call sites
// then never state either as a number (issue 9: the layout lives in the shader, or in a header
// the shader shares with the host).
//
// And what the device's limits must allow once the shader is specialized (issue 21): the
// workgroup size, the bytes of shared (Workgroup) memory and the SPIR-V capabilities it declares.
// Spec constants are evaluated with the values the pipeline is created with, so a tile chosen from
// the limits is checked as the driver will see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::gpu {

struct ShaderInterface {
  uint32_t bindings = 0;    // max Binding decoration (set 0) + 1; 0 when the shader binds nothing
  uint32_t push_bytes = 0;  // size of the push_constant block; 0 when there is none
};

// Fails on words that are not SPIR-V or on a push block member type it cannot size.
Result<ShaderInterface> reflect_shader(const uint32_t* words, size_t count, const char* name);

struct ShaderFootprint {
  uint32_t local_size[3] = {1, 1, 1};
  uint64_t shared_bytes = 0;           // every Workgroup variable, arrays at their specialized length
  std::vector<uint32_t> capabilities;  // OpCapability operands (SPIR-V enumerants)
  std::vector<std::string> extensions; // OpExtension names ("SPV_KHR_vulkan_memory_model", ...)
  // The shader declares SubgroupId, SubgroupLocalInvocationId or NumSubgroups: it numbers its
  // threads by subgroup lanes, so it must run as whole, full subgroups of a known size
  // (gpu::subgroup_layout_size; the pipeline layer creates it so, or refuses it).
  bool numbers_subgroup_lanes = false;
  // The module's SPIR-V version (the header's word 1: 0x00010300 for 1.3): Vulkan 1.1 takes up to
  // 1.3, 1.2 up to 1.5, 1.3 up to 1.6 (Capabilities::spirv_version).
  uint32_t spirv_version = 0;
  bool local_size_id = false;  // the workgroup size given by LocalSizeId (needs maintenance4)
  uint32_t invocations() const { return local_size[0] * local_size[1] * local_size[2]; }
};

// `spec[i]` is the value of constant_id i (gpu::SpecConstants); ids past its end keep the shader's
// default. Fails on a shared array length or workgroup size it cannot evaluate (an error, never a
// guess: the pipeline layer must know what it checks).
Result<ShaderFootprint> shader_footprint(const uint32_t* words, size_t count, const char* name,
                                         const std::vector<uint32_t>& spec);

// SPIR-V capability enumerants the limit checks read (SPIR-V 1.6 unified, "Capability").
namespace spv_cap {
constexpr uint32_t Matrix = 0, Shader = 1, Float16 = 9, Float64 = 10, Int64 = 11, Int16 = 22, Int8 = 39,
                   StorageBuffer16BitAccess = 4433, UniformAndStorageBuffer16BitAccess = 4434,
                   StoragePushConstant16 = 4435, StorageBuffer8BitAccess = 4448,
                   GroupNonUniform = 61, GroupNonUniformVote = 62, GroupNonUniformArithmetic = 63,
                   GroupNonUniformBallot = 64, GroupNonUniformShuffle = 65, GroupNonUniformShuffleRelative = 66,
                   GroupNonUniformClustered = 67, GroupNonUniformQuad = 68, VulkanMemoryModel = 5345,
                   VulkanMemoryModelDeviceScope = 5346, CooperativeMatrixNV = 5357, CooperativeMatrixKHR = 6022,
                   // VK_NV_cooperative_matrix2's (SPV_NV_cooperative_matrix2)
                   CooperativeMatrixReductionsNV = 5430, CooperativeMatrixConversionsNV = 5431,
                   CooperativeMatrixPerElementOperationsNV = 5432, CooperativeMatrixTensorAddressingNV = 5433,
                   CooperativeMatrixBlockLoadsNV = 5434;
}

}  // namespace rfa::gpu
