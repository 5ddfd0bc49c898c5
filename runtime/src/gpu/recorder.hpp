// Records dispatches into a command buffer, inserting barriers from each buffer's last access,
// submits with a fence and waits. Optional GPU timestamps around every dispatch.
//
// Hazard rule: a dispatch (or copy) that reads a buffer written since the last barrier, or writes
// a buffer read or written since then, gets a barrier first. One global memory barrier then
// covers every pending hazard; buffers never alias (the allocator hands out disjoint ranges).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::gpu {

class Context;
struct Buffer;
struct Pipeline;

struct Binding {
  const Buffer* buffer;
  bool write;
};
inline Binding in(const Buffer& b) { return {&b, false}; }
inline Binding out(const Buffer& b) { return {&b, true}; }
inline Binding inout(const Buffer& b) { return {&b, true}; }

struct DispatchTiming {
  std::string label;
  double ms = 0;
};

class Recorder {
 public:
  explicit Recorder(Context& ctx);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Starts a new command buffer (the previous submission must have completed).
  Status begin();
  // Records one dispatch of `groups` workgroups. `push` holds pipeline.push_bytes bytes.
  void dispatch(const Pipeline& p, std::initializer_list<Binding> bindings, const void* push,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1, const char* label = nullptr);
  void dispatch(const Pipeline& p, const std::vector<Binding>& bindings, const void* push,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1, const char* label = nullptr);
  void copy(const Buffer& src, const Buffer& dst, VkDeviceSize bytes, VkDeviceSize src_offset = 0,
            VkDeviceSize dst_offset = 0);
  void fill(const Buffer& dst, uint32_t value = 0);
  // Writes `bytes` (<= 65536, a multiple of 4) of host data into dst at record time
  // (vkCmdUpdateBuffer): ordered with the dispatches around it like any transfer write.
  void update(const Buffer& dst, const void* data, VkDeviceSize bytes, VkDeviceSize dst_offset = 0);
  // Makes every write so far visible to the host, ends, submits, waits, reads the timestamps.
  Status submit_and_wait();

  bool recording() const { return recording_; }
  uint32_t dispatch_count() const { return dispatches_; }
  uint32_t barrier_count() const { return barriers_; }
  // Per-dispatch GPU times of the last submission (empty when timestamps are off or unsupported).
  const std::vector<DispatchTiming>& timings() const { return timings_; }
  double gpu_ms_total() const;

 private:
  struct Access {
    bool read = false, written = false;
  };
  void track(const std::vector<Binding>& bindings);
  void bind_descriptors(const Pipeline& p, const std::vector<Binding>& bindings);
  Status grow_descriptor_pool();

  Context& ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t query_capacity_ = 0, queries_used_ = 0;
  std::vector<std::string> query_labels_;
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t current_pool_ = 0;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn_ = nullptr;
  std::unordered_map<uint64_t, Access> pending_;
  bool recording_ = false;
  uint32_t dispatches_ = 0, barriers_ = 0;
  std::vector<DispatchTiming> timings_;
  Status deferred_;  // a recording-time failure reported by submit_and_wait
};

}  // namespace rfa::gpu
