#include "gpu/context.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/device_profiles.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/vk_check.hpp"
#include "gpu/vk_khr_coopmat.hpp"
#include "gpu/vk_loader.hpp"

namespace rfa::gpu {
namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// The first queue family with compute. On most devices that is the universal (graphics + compute)
// family, which apps embedding the runtime share with their rendering; a dedicated compute family
// would buy overlap with graphics that a runtime submitting one batch per step does not need.
int find_compute_family(VkPhysicalDevice phys) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, nullptr);
  std::vector<VkQueueFamilyProperties> qf(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, qf.data());
  for (uint32_t i = 0; i < n; ++i)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].queueCount > 0) return (int)i;
  return -1;
}

std::string lower(std::string s) {
  for (char& c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* ctx = static_cast<Context*>(user);
  MessageSeverity sev = MessageSeverity::verbose;
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) sev = MessageSeverity::error;
  else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) sev = MessageSeverity::warning;
  else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT) sev = MessageSeverity::info;
  ctx->deliver_message(sev, data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

struct Enumerated {
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> devices;
};

// The instance's API version: the loader's, capped at 1.3 (the highest the runtime uses: the
// SPIR-V 1.6 of the *_tile_pe kernels), at least 1.1. It only bounds what devices may be used for:
// features are probed per device and enabled through their extensions either way.
uint32_t instance_api_version() {
  uint32_t v = VK_API_VERSION_1_1;
  if (vkEnumerateInstanceVersion && vkEnumerateInstanceVersion(&v) != VK_SUCCESS) v = VK_API_VERSION_1_1;
  return std::clamp<uint32_t>(VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), 0),
                              VK_API_VERSION_1_1, VK_API_VERSION_1_3);
}

Status create_instance(bool validation, bool* portability, VkInstance* out, uint32_t* api_version = nullptr) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "rfa-vk";
  app.pEngineName = "rfa-vk";
  app.apiVersion = instance_api_version();
  if (api_version) *api_version = app.apiVersion;

  std::vector<const char*> layers, exts;
  if (validation) {
    bool has = false;
    RFA_TRY(instance_layer_present(kValidationLayer, &has));
    if (!has)
      return Status(Code::device_error,
                    "validation was requested (ContextOptions::validation) but the layer "
                    "VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  // MoltenVK and other non-conformant drivers only appear with portability enumeration.
  RFA_TRY(instance_extension_present(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME, portability));
  if (*portability) {
    exts.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = (uint32_t)layers.size();
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = (uint32_t)exts.size();
  ci.ppEnabledExtensionNames = exts.data();
  VkResult r = vkCreateInstance(&ci, nullptr, out);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Status(Code::device_error, "no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); "
                                      "install one, e.g. Debian's mesa-vulkan-drivers");
  if (r != VK_SUCCESS) return vk_status(r, "vkCreateInstance", __FILE__, __LINE__);
  return Status::Ok();
}

Result<std::vector<VkPhysicalDevice>> physical_devices(VkInstance inst) {
  uint32_t n = 0;
  VK_TRY(vkEnumeratePhysicalDevices(inst, &n, nullptr));
  std::vector<VkPhysicalDevice> devs(n);
  if (n) {
    const VkResult r = vkEnumeratePhysicalDevices(inst, &n, devs.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_status(r, "vkEnumeratePhysicalDevices", __FILE__, __LINE__);
  }
  devs.resize(n);
  return devs;
}

DeviceInfo describe(VkInstance inst, VkPhysicalDevice phys, int index, uint32_t api = VK_API_VERSION_1_1) {
  int family = find_compute_family(phys);
  return describe_device(probe_capabilities(inst, phys, family < 0 ? 0 : (uint32_t)family, api), index, family >= 0);
}

// Picks a device: an explicit selector (index or name substring) or the best type.
Result<int> select_device(VkInstance inst, const std::vector<VkPhysicalDevice>& devs, const std::string& sel) {
  if (devs.empty())
    return Status(Code::device_error, "no Vulkan physical device found; install a driver "
                                      "(Debian: mesa-vulkan-drivers for the CPU device lavapipe)");
  std::string listing;
  for (size_t i = 0; i < devs.size(); ++i) {
    DeviceInfo d = describe(inst, devs[i], (int)i);
    listing += "\n  " + std::to_string(i) + ": " + d.name + " (" + d.type + ")";
  }
  if (!sel.empty()) {
    bool numeric = std::all_of(sel.begin(), sel.end(), [](char c) { return std::isdigit((unsigned char)c); });
    if (numeric) {
      long idx = std::strtol(sel.c_str(), nullptr, 10);
      if (idx < 0 || idx >= (long)devs.size())
        return Status(Code::device_error, "device index " + sel + " is out of range; devices:" + listing);
      if (find_compute_family(devs[(size_t)idx]) < 0)
        return Status(Code::device_error, "device " + sel + " has no compute queue; devices:" + listing);
      return (int)idx;
    }
    for (size_t i = 0; i < devs.size(); ++i) {
      DeviceInfo d = describe(inst, devs[i], (int)i);
      if (lower(d.name).find(lower(sel)) != std::string::npos && d.has_compute_queue) return (int)i;
    }
    return Status(Code::device_error, "no Vulkan device with a compute queue matches '" + sel + "'; devices:" + listing);
  }
  int best = -1, best_rank = -1;
  for (size_t i = 0; i < devs.size(); ++i) {
    if (find_compute_family(devs[i]) < 0) continue;
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    if (device_type_rank(p.deviceType) > best_rank) {
      best_rank = device_type_rank(p.deviceType);
      best = (int)i;
    }
  }
  if (best < 0) return Status(Code::device_error, "no Vulkan device has a compute queue; devices:" + listing);
  return best;
}

// The profile named in the options, intersected into the probed capabilities (before the device is
// created, so a feature the profile lacks is not enabled either), and the range override.
Status apply_options_limits(Capabilities& caps, const ContextOptions& options) {
  if (!options.device_profile.empty()) {
    const DeviceProfile* p = find_device_profile(options.device_profile);
    if (!p)
      return Status(Code::invalid_argument, "unknown device profile '" + options.device_profile +
                                                "'; the profiles are: " + device_profile_list());
    apply_device_profile(caps, *p);
  }
  if (options.max_storage_buffer_range)
    caps.max_storage_buffer_range = std::min(caps.max_storage_buffer_range, options.max_storage_buffer_range);
  if (options.max_storage_buffers_per_stage)
    caps.max_storage_buffers_per_stage = std::min(caps.max_storage_buffers_per_stage, options.max_storage_buffers_per_stage);
  return Status::Ok();
}

}  // namespace

DeviceInfo describe_device(const Capabilities& c, int index, bool has_compute_queue) {
  DeviceInfo d;
  d.index = index;
  d.name = c.device_name;
  d.type = c.type_name();
  d.driver = c.driver_name + (c.driver_info.empty() ? "" : " (" + c.driver_info + ")");
  d.api = c.api_string();
  d.vendor_id = c.vendor_id;
  d.device_id = c.device_id;
  d.device_local_bytes = c.device_local_bytes;
  d.has_compute_queue = has_compute_queue;
  return d;
}

Result<std::vector<DeviceInfo>> list_devices_impl() {
  RFA_TRY(load_vulkan());
  bool portability = false;
  VkInstance inst = VK_NULL_HANDLE;
  uint32_t api = VK_API_VERSION_1_1;
  Status s = create_instance(false, &portability, &inst, &api);
  if (!s.ok()) return s;
  if (Status f = load_vulkan_functions(inst); !f.ok()) {
    vkDestroyInstance(inst, nullptr);
    return f;
  }
  std::vector<DeviceInfo> out;
  auto devs = physical_devices(inst);
  if (!devs) {
    vkDestroyInstance(inst, nullptr);
    return devs.status();
  }
  for (size_t i = 0; i < devs->size(); ++i) out.push_back(describe(inst, (*devs)[i], (int)i, api));
  vkDestroyInstance(inst, nullptr);
  return out;
}

void Context::deliver_message(MessageSeverity sev, const char* msg, bool from_validation) {
  if (from_validation && sev >= MessageSeverity::warning) validation_messages_.fetch_add(1);
  if (on_message_) {
    on_message_(sev, msg);
  } else if (sev >= MessageSeverity::warning) {
    std::fprintf(stderr, "rfa-vk: %s%s: %s\n", from_validation ? "vulkan " : "",
                 sev == MessageSeverity::error ? "error" : "warning", msg);
  }
}

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
  std::unique_ptr<Context> ctx(new Context());
  ctx->owns_ = true;
  ctx->on_message_ = options.on_message;
  // The library reads no environment: RFA_VALIDATION and RFA_DEVICE reach it through the options
  // (context_options_from_environment() in the programs, rfa/environment.hpp).
  const bool validation = options.validation > 0;

  RFA_TRY(load_vulkan());
  bool portability = false;
  uint32_t api = VK_API_VERSION_1_1;
  RFA_TRY(create_instance(validation, &portability, &ctx->instance_, &api));
  RFA_TRY(load_vulkan_functions(ctx->instance_));

  if (validation) {
    auto create_messenger = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
        ctx->instance_, "vkCreateDebugUtilsMessengerEXT");
    if (!create_messenger) return Status(Code::device_error, "VK_EXT_debug_utils is missing: cannot report validation messages");
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = debug_callback;
    mi.pUserData = ctx.get();
    VK_TRY(create_messenger(ctx->instance_, &mi, nullptr, &ctx->messenger_));
  }

  auto devs = physical_devices(ctx->instance_);
  if (!devs) return devs.status();
  auto idx = select_device(ctx->instance_, *devs, options.device);
  if (!idx) return idx.status();
  ctx->device_index_ = *idx;
  ctx->phys_ = (*devs)[(size_t)*idx];
  ctx->queue_family_ = (uint32_t)find_compute_family(ctx->phys_);
  Capabilities caps = probe_capabilities(ctx->instance_, ctx->phys_, ctx->queue_family_, api);
  // Pooled descriptor sets on request: GPU-assisted validation of the Khronos layer 1.3.239 tracks
  // only pooled descriptors (it reports push descriptors "uninitialized").
  caps.push_descriptors = caps.push_descriptors && options.kernels.push_descriptors;
  RFA_TRY(apply_options_limits(caps, options));

  std::vector<const char*> exts;
  if (caps.push_descriptors) exts.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  // The spec requires enabling VK_KHR_portability_subset wherever the device exposes it.
  bool portability_subset = false;
  RFA_TRY(device_extension_present(ctx->phys_, "VK_KHR_portability_subset", &portability_subset));
  if (portability_subset) exts.push_back("VK_KHR_portability_subset");

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = ctx->queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  // Enable the optional features the kernels can use (16-bit storage; fp64 for the sampler's
  // probabilities) when present.
  VkPhysicalDevice16BitStorageFeatures f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  f16.storageBuffer16BitAccess = caps.storage_16bit ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.features.shaderFloat64 = caps.shader_float64 ? VK_TRUE : VK_FALSE;
  feats.pNext = &f16;
  // fp16 arithmetic for the attention tile's fp16 products (KernelOptions::attention_f16_math).
  VkPhysicalDeviceShaderFloat16Int8Features f16arith{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  if (caps.shader_float16) {
    f16arith.shaderFloat16 = VK_TRUE;
    f16.pNext = &f16arith;
    exts.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  // The optional structs below are linked in front of feats.pNext, each where its feature is used.
  auto chain = [&feats](auto& s) {
    s.pNext = feats.pNext;
    feats.pNext = &s;
  };
  // Full subgroups of a required size for the kernels that number their threads by subgroup lanes
  // (gpu::subgroup_layout_size; the pipeline layer asks for them when it creates such a kernel).
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sizes{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  if (caps.subgroup_size_control) {
    sizes.subgroupSizeControl = VK_TRUE;
    sizes.computeFullSubgroups = VK_TRUE;
    chain(sizes);
    exts.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  }
  // The Vulkan memory model: the cooperative-matrix kernels' SPIR-V declares it (VulkanMemoryModel),
  // and a pipeline that declares a capability whose feature is off is invalid usage.
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
  if (caps.vulkan_memory_model) {
    memory_model.vulkanMemoryModel = VK_TRUE;
    memory_model.vulkanMemoryModelDeviceScope = caps.vulkan_memory_model_device_scope ? VK_TRUE : VK_FALSE;
    chain(memory_model);
    exts.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  }
  // Cooperative matrices for the attention tile's *_tile_cm (NV) and *_tile_ck (KHR) kernels
  // (KernelOptions::attention_coopmat).
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (caps.coopmat_nv) {
    coopmat.cooperativeMatrix = VK_TRUE;
    chain(coopmat);
    exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat_khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  if (caps.coopmat_khr()) {
    coopmat_khr.cooperativeMatrix = VK_TRUE;
    chain(coopmat_khr);
    exts.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  // LocalSizeId (the workgroup size of SPIR-V 1.6 modules: the *_tile_pe kernels). Core in 1.3.
  VkPhysicalDeviceMaintenance4Features maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
  if (caps.maintenance4) {
    maintenance4.maintenance4 = VK_TRUE;
    chain(maintenance4);
  }
  // Per-element operations, row reductions and accumulator conversions for the *_tile_pe kernels
  // (KernelOptions::attention_coopmat_per_element).
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (caps.coopmat_nv2) {
    coopmat2.cooperativeMatrixReductions = VK_TRUE;
    coopmat2.cooperativeMatrixConversions = VK_TRUE;
    coopmat2.cooperativeMatrixPerElementOperations = VK_TRUE;
    chain(coopmat2);
    exts.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  }
  // Driver statistics per pipeline, only when asked (rfa-bench attention --stats).
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pexec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (caps.pipeline_executable_info && options.capture_pipeline_statistics) {
    pexec.pipelineExecutableInfo = VK_TRUE;
    chain(pexec);
    exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &feats;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = (uint32_t)exts.size();
  di.ppEnabledExtensionNames = exts.data();
  VK_TRY(vkCreateDevice(ctx->phys_, &di, nullptr, &ctx->device_));
  vkGetDeviceQueue(ctx->device_, ctx->queue_family_, 0, &ctx->queue_);
  ctx->caps_ = caps;
  RFA_TRY(ctx->init_common(options));
  return ctx;
}

Result<std::unique_ptr<Context>> Context::adopt(const AdoptedDevice& a, const ContextOptions& options) {
  if (!a.instance || !a.physical_device || !a.device || !a.queue)
    return Status(Code::invalid_argument, "adopt: instance, physical_device, device and queue must all be set");
  // The app's own loader when it names one (AdoptedDevice::get_instance_proc_addr), else the system's.
  RFA_TRY(load_vulkan(a.get_instance_proc_addr));
  RFA_TRY(load_vulkan_functions(a.instance));
  std::unique_ptr<Context> ctx(new Context());
  ctx->owns_ = false;
  ctx->on_message_ = options.on_message;
  ctx->instance_ = a.instance;
  ctx->phys_ = a.physical_device;
  ctx->device_ = a.device;
  ctx->queue_ = a.queue;
  ctx->queue_family_ = a.queue_family;
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(a.physical_device, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(a.physical_device, &nq, qf.data());
  if (a.queue_family >= nq || !(qf[a.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    return Status(Code::invalid_argument, "adopt: queue family " + std::to_string(a.queue_family) + " has no compute support");
  ctx->caps_ = probe_capabilities(a.instance, a.physical_device, a.queue_family);
  // Only use what the app enabled on its device.
  bool push = false;
  for (auto& e : a.enabled_extensions)
    if (e == VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) push = true;
  ctx->caps_.push_descriptors = ctx->caps_.push_descriptors && push && options.kernels.push_descriptors;
  ctx->caps_.storage_16bit = false;  // unknown whether the app enabled the feature
  ctx->caps_.shader_float64 = false;  // likewise
  ctx->caps_.shader_float16 = false;  // likewise
  ctx->caps_.coopmat_nv = false;      // likewise
  ctx->caps_.coopmat_khr_block = 0;   // likewise
  ctx->caps_.coopmat_nv2 = false;     // likewise (and the app's instance version is unknown)
  ctx->caps_.maintenance4 = false;    // likewise
  ctx->caps_.vulkan_memory_model = ctx->caps_.vulkan_memory_model_device_scope = false;  // likewise
  ctx->caps_.subgroup_size_control = false;  // likewise: the subgroup-lane kernels are not chosen
  ctx->caps_.pipeline_executable_info = false;  // likewise
  RFA_TRY(apply_options_limits(ctx->caps_, options));
  RFA_TRY(ctx->init_common(options));
  return ctx;
}

Status Context::init_common(const ContextOptions& options) {
  timestamps_ = options.timestamps;
  // create() enabled the feature exactly when both hold; an adopted device reports it absent.
  capture_statistics_ = options.capture_pipeline_statistics && caps_.pipeline_executable_info;
  kernels_ = options.kernels;
  uint64_t budget = options.memory_budget;
  if (budget == 0) budget = caps_.device_local_bytes / 10 * 9;
  // Packed bindings where some kernel binds more storage buffers than the device allows per stage
  // (docs/device-profiles.md): one arena buffer for every tensor, as large as one descriptor may
  // cover and the budget allows, in memory both the device and the host reach (uploads, readbacks
  // and the kernels' tensors all live in it). Without such memory the kernels stay unpacked and a
  // session that needs one is refused naming the limit.
  caps_.packed_bindings = caps_.max_storage_buffers_per_stage < most_storage_buffers() &&
                          choose_memory_type(caps_.memory_types, ~0u, MemoryKind::arena, caps_.unified_memory) >= 0;
  if (caps_.packed_bindings) {
    const uint64_t align = std::max<uint64_t>({caps_.storage_buffer_alignment, caps_.uniform_buffer_alignment, 256});
    caps_.packed_arena_bytes = std::min(caps_.max_storage_buffer_range, budget) / align * align;
  }
  allocator_ = std::make_unique<Allocator>(*this, budget);
  pipelines_ = std::make_unique<PipelineCache>(*this);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pi.queueFamilyIndex = queue_family_;
  VK_TRY(vkCreateCommandPool(device_, &pi, nullptr, &once_pool_));
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_TRY(vkCreateFence(device_, &fi, nullptr, &once_fence_));
  return Status::Ok();
}

Context::~Context() {
  if (device_) vkDeviceWaitIdle(device_);
  pipelines_.reset();
  allocator_.reset();
  if (device_) {
    if (once_fence_) vkDestroyFence(device_, once_fence_, nullptr);
    if (once_pool_) vkDestroyCommandPool(device_, once_pool_, nullptr);
  }
  if (!owns_) return;  // an adopted device, queue and instance belong to the app
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

Status Context::usable() const {
  if (lost_.load()) return Status(Code::device_lost, "the Vulkan device was lost earlier; create a new context");
  return Status::Ok();
}

Status Context::note(Status s) {
  if (s.code() == Code::device_lost && !lost_.exchange(true) && device_) {
    // Once, when the loss is first seen: whatever the device still runs (after a wait that timed
    // out it may) is finished or abandoned before the app destroys the objects it uses. A device
    // that is really lost returns at once; the queue lock keeps other threads' submits out.
    std::lock_guard<std::mutex> lock(queue_mutex_);
    vkDeviceWaitIdle(device_);
  }
  return s;
}

Status Context::submit_once(const std::function<void(VkCommandBuffer)>& record) {
  RFA_TRY(usable());
  std::lock_guard<std::mutex> once_lock(once_mutex_);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = once_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  RFA_TRY(note([&]() -> Status { VK_TRY(vkAllocateCommandBuffers(device_, &ai, &cb)); return Status::Ok(); }()));
  bool pending = false;  // submitted and not known to be done: the command buffer must stay
  Status s = [&]() -> Status {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VK_TRY(vkBeginCommandBuffer(cb, &bi));
    record(cb);
    VK_TRY(vkEndCommandBuffer(cb));
    // The fence is reset before it is used again (see reset_fence in recorder.cpp).
    if (once_fence_signaled_) {
      VK_TRY(vkResetFences(device_, 1, &once_fence_));
      once_fence_signaled_ = false;
    }
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      VK_TRY(vkQueueSubmit(queue_, 1, &si, once_fence_));
    }
    pending = true;
    const VkResult r = vkWaitForFences(device_, 1, &once_fence_, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return vk_wait_status(r, "vkWaitForFences", __FILE__, __LINE__);
    pending = false;
    once_fence_signaled_ = true;
    return Status::Ok();
  }();
  // A command buffer the device may still run is left to the pool, which the destructor frees
  // after the device is idle (the context is lost by then: vk_wait_status).
  if (!pending) vkFreeCommandBuffers(device_, once_pool_, 1, &cb);
  return note(s);
}

Status Context::upload(const Buffer& dst, const void* src, size_t bytes, size_t dst_offset) {
  RFA_TRY(usable());
  if (dst_offset + bytes > dst.size)
    return Status(Code::invalid_argument, "upload of " + std::to_string(bytes) + " bytes at offset " +
                                              std::to_string(dst_offset) + " exceeds buffer '" + dst.label +
                                              "' of " + std::to_string(dst.size) + " bytes");
  if (bytes == 0) return Status::Ok();
  if (dst.mapped) {
    std::memcpy(dst.mapped + dst_offset, src, bytes);
    return Status::Ok();
  }
  auto staging = allocator_->allocate(bytes, MemoryKind::upload, "staging upload");
  if (!staging) return staging.status();
  std::memcpy(staging->mapped, src, bytes);
  return submit_once([&](VkCommandBuffer cb) {
    VkBufferCopy c{staging->offset, dst.offset + dst_offset, bytes};
    vkCmdCopyBuffer(cb, staging->vk, dst.vk, 1, &c);
  });
}

Result<Buffer> Context::upload_new(const std::vector<float>& floats, const std::string& label) {
  auto b = allocator_->allocate(std::max<size_t>(floats.size(), 1) * 4, MemoryKind::device, label);
  if (!b) return b.status();
  RFA_TRY(upload(*b, floats.data(), floats.size() * 4));
  return b.take();
}

Status Context::download(const Buffer& src, void* dst, size_t bytes, size_t src_offset) {
  RFA_TRY(usable());
  if (src_offset + bytes > src.size)
    return Status(Code::invalid_argument, "download of " + std::to_string(bytes) + " bytes at offset " +
                                              std::to_string(src_offset) + " exceeds buffer '" + src.label +
                                              "' of " + std::to_string(src.size) + " bytes");
  if (bytes == 0) return Status::Ok();
  if (src.mapped) {
    std::memcpy(dst, src.mapped + src_offset, bytes);
    return Status::Ok();
  }
  auto staging = allocator_->allocate(bytes, MemoryKind::readback, "staging readback");
  if (!staging) return staging.status();
  RFA_TRY(submit_once([&](VkCommandBuffer cb) {
    VkBufferCopy c{src.offset + src_offset, staging->offset, bytes};
    vkCmdCopyBuffer(cb, src.vk, staging->vk, 1, &c);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }));
  std::memcpy(dst, staging->mapped, bytes);
  return Status::Ok();
}

}  // namespace rfa::gpu
