// The Vulkan context: which device runs RFA-VK, created by the runtime or adopted from an app.
#pragma once

#include "rfa/export.h"

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

namespace gpu { class Context; }

RFA_API const char* version();  // "0.1.0"

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string type;    // discrete | integrated | virtual | cpu | other
  std::string driver;  // driver name and info, e.g. "llvmpipe (Mesa 22.3.6 (LLVM 15.0.6))"
  std::string api;     // "1.3.230"
  uint32_t vendor_id = 0, device_id = 0;
  uint64_t device_local_bytes = 0;
  bool has_compute_queue = false;
};

// Lists the Vulkan devices the loader sees (no device is created).
RFA_API Result<std::vector<DeviceInfo>> list_devices();

enum class MessageSeverity { verbose = 0, info = 1, warning = 2, error = 3 };
using MessageCallback = std::function<void(MessageSeverity, const char* message)>;

// Kernel variants forced instead of the device's own choice: for comparing kernels on one device
// and for tests that exercise every path. Read once when the context is created. The library never
// reads the environment: the programs map RFA_LINEAR_KERNEL, RFA_ATTN_* and RFA_NO_PUSH_DESCRIPTORS
// onto these with kernel_options_from_environment() (rfa/environment.hpp, inline: it runs in the app).
struct KernelOptions {
  std::string linear;            // "" (device's choice) | "tiled" | "gemv" | "direct"
  int attention_direct_kv = -1;  // -1 device's choice; 0 shared-memory key tiles; 1 keys read from the cache
  int attention_lag_table = -1;  // -1 device's choice (on); 0 every pair's E, B, P computed; 1 integer lags from a table
  int attention_split_k = -1;    // -1 device's choice; 0 or 1 one pass; n > 1 keys split n ways, then a reduce pass
  int attention_tile = -1;       // -1 device's choice (GPUs, > 8 rows); 0 off; 1 the cooperative tile where it applies
  int attention_f16_math = -1;   // -1 device's choice (off); 0 fp32; 1 fp16 products in the tile (needs shaderFloat16)
  int attention_coopmat = -1;    // -1 device's choice (off until measured on a GPU); 0 off; 1 the tile on cooperative
                                 // matrices where the device has them (VK_KHR_cooperative_matrix, else
                                 // VK_NV_cooperative_matrix); 2 the same kernel with the matrix operations emulated by
                                 // subgroup lanes (tests it on any device)
  int attention_tile_workgroup = -1;  // -1 device's choice (128 threads); n: the tile's workgroup of n threads (whole
                                      // row groups and subgroups): e.g. 4 subgroups, the matrices' shape on NVIDIA
  // The kernels-v3 switches (docs/math.md §9, "Kernels v3"): each -1 the default named, 0 the old
  // kernel, 1 the new, so that scripts/gpu-report.sh times both in one run. Results agree to fp32
  // rounding (fp16: within the fp16 bounds) either way.
  int attention_fma = -1;             // -1 on: cross terms as two explicit FMAs per complex dim (0: dot + add)
  int attention_q_registers = -1;     // -1 off: the scalar tile's Q rows in registers (0: read from shared memory)
  int attention_pad_strides = -1;     // -1 on: p E and cross-term rows padded to 8 words mod 32 (no bank conflicts)
  int attention_f16_chunk = -1;       // -1 4: fp16 products summed in fp16 over n dims before one conversion (1: each)
  int attention_prefetch = -1;        // -1 on: the matrix tile loads the next K/V into registers before phase B
  int attention_raw_f16 = -1;         // -1 on: fp16 cache words copied into the matrices' tiles unconverted
  int attention_lag_e2 = -1;          // -1 on: E^2 read from the lag table's spare slot (0: E * E per pair)
  int attention_decode_registers = -1;  // -1 on (GPUs): decode steps read K/V straight into registers, several
                                        // subgroups a row, no barrier in the walk (0: key tiles in shared memory)
  int attention_split_cores = -1;     // -1 on: split-k aims at two workgroups per compute unit of the device (0: 512)
  int attention_coopmat_per_element = -1;  // -1 on where the device has VK_NV_cooperative_matrix2: the matrix tile's
                                           // pair terms, softmax and output applied per element of the accumulators
                                           // (the *_tile_pe kernels; 0: through shared memory, the *_tile_ck kernels)
  bool push_descriptors = true;  // false: pooled descriptor sets even where VK_KHR_push_descriptor exists
};
// Device profiles (docs/device-profiles.md): the limits and features of a device the runtime is not
// running on, from the Khronos Vulkan-Profiles repository, applied on top of the real device's.
struct DeviceProfileInfo {
  std::string name;         // "android-baseline-2022", "vulkan-minimum", "apple-m1-moltenvk", ...
  std::string description;  // the device or profile, in one line
  std::string source;       // the Vulkan-Profiles file the values come from
};
RFA_API std::vector<DeviceProfileInfo> device_profiles();

struct ContextOptions {
  // Device choice: "" picks discrete > integrated > virtual > cpu; else an index ("1") or a
  // case-insensitive name substring ("llvmpipe"). The library never reads RFA_DEVICE: an app that
  // wants it passes it in (context_options_from_environment(), rfa/environment.hpp).
  std::string device;
  // Validation layer + debug messenger: 1 on; 0 or -1 (the default) off. The library never reads
  // RFA_VALIDATION: context_options_from_environment() maps it onto this field.
  int validation = -1;
  // Receives validation and driver messages; default: warnings and errors go to stderr.
  MessageCallback on_message;
  // Device memory the runtime may use, in bytes; 0 = 90% of the device-local heaps.
  uint64_t memory_budget = 0;
  // GPU timestamps around every dispatch when the device supports them.
  bool timestamps = true;
  // Ask the driver for per-pipeline statistics (registers, spills, instruction counts: whatever it
  // reports through VK_KHR_pipeline_executable_properties), for `rfa-bench attention --stats`.
  // Off by default: capturing may cost pipeline build time and changes nothing a kernel computes.
  // Ignored where the device lacks the extension or its pipelineExecutableInfo feature, and for
  // adopted devices (the app decides which features its device has).
  bool capture_pipeline_statistics = false;
  KernelOptions kernels;
  // A device profile's name (device_profiles()): the runtime then sees the intersection of the
  // real device's limits and features with the profile's, and every kernel choice, pipeline and
  // buffer size keeps to it. "" none. An unknown name fails Context::create (invalid_argument,
  // listing the names). The library never reads RFA_DEVICE_PROFILE; the programs and tests pass
  // it in here.
  std::string device_profile;
  // Lowers maxStorageBufferRange further (0: the device's, after the profile): to run the
  // paths that split or refuse a buffer larger than one descriptor may cover on any device.
  uint64_t max_storage_buffer_range = 0;
  // Lowers maxPerStageDescriptorStorageBuffers further (0: the device's, after the profile): below
  // what a kernel binds, that kernel runs with packed bindings (every tensor in one arena buffer,
  // docs/device-profiles.md), as on phones that allow 4; this runs that path on any device.
  uint32_t max_storage_buffers_per_stage = 0;
  // Check every attention path the kernel chooser can take on this device (the attention part of
  // rfa-run --self-check: small cases against a CPU evaluation) when the context is created, and
  // never choose a path that failed; Context::kernel_refusals() names them. Costs one pipeline
  // build and one small dispatch per path (seconds on a GPU, about a minute on lavapipe) unless
  // `kernel_cache` holds this device's verdicts.
  bool verify_kernels = false;
  // A file the app names for the verdicts: read at creation, written (atomically) where it holds
  // none for this device, driver version and build of the kernels. "" checks at every creation.
  std::string kernel_cache;
};

// An app's own Vulkan objects. The runtime records into `queue` (externally synchronized through
// Context::lock_queue when the app shares it) and never destroys any of them.
struct AdoptedDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  // Device extensions the app enabled (the runtime uses VK_KHR_push_descriptor only if listed).
  std::vector<std::string> enabled_extensions;
  // The app's vkGetInstanceProcAddr, for an app that reaches Vulkan through a loader of its own
  // (a static or bundled one). nullptr: the runtime opens the system loader (libvulkan.so.1,
  // vulkan-1.dll). One loader per process: naming another than the one already in use is refused.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
};

namespace internal {
struct Access;
}  // namespace internal

class RFA_API Context {
 public:
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options = {});
  static Result<std::unique_ptr<Context>> adopt(const AdoptedDevice& device, const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  DeviceInfo device_info() const;
  std::string capabilities_summary() const;  // multi-line, for --list-devices / --json
  // Validation messages of warning or error severity seen so far (tests assert it stays 0).
  uint64_t validation_message_count() const;
  bool lost() const;
  // The attention paths ContextOptions::verify_kernels saw fail on this device, one line each
  // (kernel, error, what the chooser no longer takes); empty when all passed or nothing was checked.
  std::vector<std::string> kernel_refusals() const;
  // Vulkan queues are externally synchronized: the runtime holds this lock around each of its
  // submissions; an app that shares an adopted queue must hold it around its own vkQueueSubmit.
  std::mutex& queue_mutex();

 private:
  friend struct internal::Access;  // the library's and its tests' way in (runtime/src/core/access.hpp)
  RFA_HIDDEN explicit Context(std::unique_ptr<gpu::Context> impl);  // the library's own: not exported
  std::unique_ptr<gpu::Context> impl_;
};

}  // namespace rfa

// kernel_options_from_environment() and context_options_from_environment(): inline, so that the app,
// never librfa, reads its environment.
#include "rfa/environment.hpp"
