// Instance, physical device, device and queue: created here or adopted from an app.
// Owns the allocator and the pipeline cache of that device. No global state: two contexts (or two
// sessions on one context, from two threads) never share anything mutable without a lock.
#pragma once

#include "gpu/vk.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/capabilities.hpp"
#include "rfa/context.hpp"
#include "rfa/status.hpp"

namespace rfa::gpu {

class Allocator;
class PipelineCache;
struct Buffer;

// The public description of a device (rfa::list_devices, rfa::Context::device_info) from its
// capabilities: the one place a DeviceInfo is filled.
DeviceInfo describe_device(const Capabilities& c, int index, bool has_compute_queue);

class Context {
 public:
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options);
  static Result<std::unique_ptr<Context>> adopt(const AdoptedDevice& device, const ContextOptions& options);
  ~Context();

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical_device() const { return phys_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const Capabilities& caps() const { return caps_; }
  // The capabilities while the context is being set up, before any session: the kernel check
  // (ContextOptions::verify_kernels) takes the features of failed paths away here.
  Capabilities& caps_during_setup() { return caps_; }
  bool owns_device() const { return owns_; }
  bool timestamps_enabled() const { return timestamps_ && caps_.timestamps; }
  int device_index() const { return device_index_; }
  // Kernel variants forced by the app (ContextOptions::kernels); choosers read them, never the environment.
  const KernelOptions& kernels() const { return kernels_; }
  // Pipelines are created with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR (asked for through
  // ContextOptions::capture_pipeline_statistics, and the device enabled it).
  bool capture_statistics() const { return capture_statistics_; }

  Allocator& allocator() { return *allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }

  // Vulkan queues are externally synchronized: every submit goes through this lock.
  std::mutex& queue_mutex() { return queue_mutex_; }

  // Device loss is sticky: after it every call that would touch the GPU returns device_lost.
  bool lost() const { return lost_.load(); }
  Status usable() const;
  // Records device loss from a failed call's Status and passes the Status through.
  Status note(Status s);

  // Synchronous helpers: mapped memcpy where the buffer is host-visible, staging copy otherwise.
  Status upload(const Buffer& dst, const void* src, size_t bytes, size_t dst_offset = 0);
  Status download(const Buffer& src, void* dst, size_t bytes, size_t src_offset = 0);
  // A new device buffer holding `floats` (at least one float, so an empty tensor still binds).
  Result<Buffer> upload_new(const std::vector<float>& floats, const std::string& label);
  // Records `record` into a one-time command buffer, submits it and waits.
  Status submit_once(const std::function<void(VkCommandBuffer)>& record);

  uint64_t validation_message_count() const { return validation_messages_.load(); }
  // A message for the app's callback (default: warnings and errors to stderr). `from_validation`:
  // the validation layer's, counted by validation_message_count; the runtime's own are not.
  void deliver_message(MessageSeverity sev, const char* msg, bool from_validation = true);

 private:
  Context() = default;
  Status init_common(const ContextOptions& options);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  int device_index_ = 0;
  bool owns_ = false;
  bool timestamps_ = true;
  bool capture_statistics_ = false;
  Capabilities caps_;
  KernelOptions kernels_;
  MessageCallback on_message_;
  std::atomic<uint64_t> validation_messages_{0};
  std::atomic<bool> lost_{false};
  std::mutex queue_mutex_;
  std::mutex once_mutex_;
  VkCommandPool once_pool_ = VK_NULL_HANDLE;
  VkFence once_fence_ = VK_NULL_HANDLE;
  bool once_fence_signaled_ = false;  // reset before its next submission
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
};

}  // namespace rfa::gpu
