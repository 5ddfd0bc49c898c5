#include "gpu/device_profiles.hpp"

#include <algorithm>

namespace rfa::gpu {
namespace {

constexpr VkSubgroupFeatureFlags kBasic = VK_SUBGROUP_FEATURE_BASIC_BIT;
constexpr VkSubgroupFeatureFlags kDesktop =
    VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
    VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT |
    VK_SUBGROUP_FEATURE_CLUSTERED_BIT | VK_SUBGROUP_FEATURE_QUAD_BIT;
constexpr VkSubgroupFeatureFlags kMoltenVK = kDesktop & ~VK_SUBGROUP_FEATURE_CLUSTERED_BIT;

// Values as extracted by tools/device-profiles/extract_profiles.py from KhronosGroup/Vulkan-Profiles
// at commit 9a121df3b059556c032e0a60d2a29b0a37d2091f (docs/device-profiles.md). A limit a profile
// leaves out is the Vulkan 1.1 minimum for it (subgroup operations: BASIC; no timestamps).
const std::vector<DeviceProfile> kProfiles = {
    {"android-baseline-2022", "Android Vulkan Baseline 2022 (VP_ANDROID_baseline_2022, Vulkan 1.1)",
     "profiles/VP_ANDROID_baseline_2022.json", 16384, 128, {128, 128, 64}, {65535, 65535, 65535}, 128, 4, 24,
     134217728ull, 256, kBasic, false, false, false, false, false, false, false, false, false, 0, 0, 0, false, false, false},
    {"vulkan-minimum", "Vulkan 1.1 minimum requirements (VP_LUNARG_minimum_requirements_1_1)",
     "profiles/LunarG/VP_LUNARG_minimum_requirements.json (VP_LUNARG_minimum_requirements_1_1)", 16384, 128,
     {128, 128, 64}, {65535, 65535, 65535}, 128, 4, 24, 134217728ull, 256, kBasic, false, false, false, false, false,
     false, false, false, false, 0, 0, 0, false, false, false},
    {"apple-m1-moltenvk", "Apple M1 through MoltenVK 1.2.7 on macOS 14.3 (gpuinfo)",
     "profiles/LunarG/VP_LUNARG_desktop_baseline_2023/vp_gpuinfo_apple_m1_0_2_2015_osx_14_3.json", 32768, 1024,
     {1024, 1024, 1024}, {1073741824, 1073741824, 1073741824}, 4096, 31, 155, 4294967295ull, 16, kMoltenVK, true,
     true, false, true, true, true, false, true, false, 4, 32, 256, false, false, false},
    {"intel-uhd-620", "Intel UHD Graphics 620, Windows 10 driver 101.2125 (gpuinfo)",
     "profiles/LunarG/VP_LUNARG_desktop_baseline_2024/vp_gpuinfo_intel_r__uhd_graphics_620_0_404_2125_windows_10.json",
     32768, 1024, {1024, 1024, 64}, {65536, 65536, 65536}, 256, 200, 1800, 1073741820ull, 64, kDesktop, true, true, true,
     true, true, true, false, false, true, 8, 32, 56, true, false, false},
    {"intel-iris-xe", "Intel Iris Xe Graphics (TGL GT2), Mesa 26.1.3 on Linux (gpuinfo)",
     "profiles/LunarG/VP_LUNARG_desktop_baseline_2026/"
     "vp_gpuinfo_intel_r__iris_r__xe_graphics__tgl_gt2__26_1_3_void_unknown.json",
     49152, 1024, {1024, 1024, 1024}, {2147483647u, 65535, 65535}, 256, 201326592u, 201326592u, 4294967295ull, 4,
     kDesktop, true, true, false, true, true, true, false, false, true, 8, 32, 64, true, false, false},
};

}  // namespace

const std::vector<DeviceProfile>& device_profiles() { return kProfiles; }

const DeviceProfile* find_device_profile(const std::string& name) {
  for (const DeviceProfile& p : kProfiles)
    if (name == p.name) return &p;
  return nullptr;
}

std::string device_profile_list() {
  std::string s;
  for (const DeviceProfile& p : kProfiles) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

void apply_device_profile(Capabilities& c, const DeviceProfile& p) {
  c.profile = p.name;
  c.max_shared_memory = std::min(c.max_shared_memory, p.max_shared_memory);
  c.max_workgroup_invocations = std::min(c.max_workgroup_invocations, p.max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = std::min(c.max_workgroup_size[i], p.max_workgroup_size[i]);
    c.max_workgroup_count[i] = std::min(c.max_workgroup_count[i], p.max_workgroup_count[i]);
  }
  c.max_push_constants = std::min(c.max_push_constants, p.max_push_constants);
  c.max_storage_buffers_per_stage = std::min(c.max_storage_buffers_per_stage, p.max_storage_buffers_per_stage);
  c.max_storage_buffers_per_set = std::min(c.max_storage_buffers_per_set, p.max_storage_buffers_per_set);
  c.max_storage_buffer_range = std::min(c.max_storage_buffer_range, p.max_storage_buffer_range);
  c.storage_buffer_alignment = std::max(c.storage_buffer_alignment, p.storage_buffer_alignment);
  c.subgroup_ops &= p.subgroup_ops;
  c.storage_16bit = c.storage_16bit && p.storage_16bit;
  c.shader_float16 = c.shader_float16 && p.shader_float16;
  c.shader_float64 = c.shader_float64 && p.shader_float64;
  c.shader_int64 = c.shader_int64 && p.shader_int64;
  c.timestamps = c.timestamps && p.timestamps;
  c.push_descriptors = c.push_descriptors && p.push_descriptors;
  c.vulkan_memory_model = c.vulkan_memory_model && p.vulkan_memory_model;
  c.vulkan_memory_model_device_scope = c.vulkan_memory_model_device_scope && c.vulkan_memory_model;
  c.coopmat_nv = c.coopmat_nv && p.coopmat_nv && c.shader_float16 && c.vulkan_memory_model;
  if (!(p.coopmat_khr && c.shader_float16 && c.vulkan_memory_model)) c.coopmat_khr_block = 0;
  c.coopmat_nv2 = c.coopmat_nv2 && p.coopmat_nv2 && c.coopmat_khr();
  c.maintenance4 = c.maintenance4 && p.coopmat_nv2;  // (no profile lists it: only the *_tile_pe kernels need it)
  // A size both the real device and the profile's allow, and the real device's default among them.
  if (p.min_subgroup_size != 0) {
    const uint32_t lo = c.min_subgroup_size ? c.min_subgroup_size : c.subgroup_size;
    const uint32_t hi = c.max_subgroup_size ? c.max_subgroup_size : c.subgroup_size;
    c.min_subgroup_size = std::max(lo, p.min_subgroup_size);
    c.max_subgroup_size = std::min(hi, p.max_subgroup_size);
    if (c.min_subgroup_size > c.max_subgroup_size || c.subgroup_size < c.min_subgroup_size ||
        c.subgroup_size > c.max_subgroup_size)
      c.subgroup_size_control = false;
  }
  if (p.max_workgroup_subgroups != 0)
    c.max_workgroup_subgroups =
        c.max_workgroup_subgroups ? std::min(c.max_workgroup_subgroups, p.max_workgroup_subgroups) : p.max_workgroup_subgroups;
  c.subgroup_size_control = c.subgroup_size_control && p.subgroup_size_control;
  // A portability-subset device stays one under any profile; a profile of one makes the runtime
  // keep to the subset's rules on a conformant device too (none of them touches compute today).
  c.portability_subset = c.portability_subset || p.portability_subset;
}

}  // namespace rfa::gpu
