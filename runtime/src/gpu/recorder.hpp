// Records dispatches into a command buffer, inserting barriers from each buffer's last access, and
// submits it with a fence. A recording can be one-shot (submit_and_wait) or kept and submitted
// again and again (begin(reusable) ... end(), then submit()/wait() per use): sessions record one
// step once per shape and replay it, writing the step's inputs into host-visible buffers between
// submits. Optional GPU timestamps: around every dispatch, or once around the whole submission.
//
// Hazard rule: a dispatch (or copy) that reads a buffer written since the last barrier, or writes
// a buffer read or written since then, gets a barrier first. One global memory barrier then
// covers every pending hazard; buffers never alias (the allocator hands out disjoint ranges).
// Every recording starts with a barrier against all earlier work on the queue, so consecutive
// submissions that share scratch buffers never overlap, and ends with one that makes device
// writes visible to the host.
#pragma once

#include "gpu/vk.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "rfa/status.hpp"

namespace rfa::gpu {

class Context;
struct Pipeline;
class Batch;

struct Binding {
  const Buffer* buffer;
  bool write;
};
inline Binding in(const Buffer& b) { return {&b, false}; }
inline Binding out(const Buffer& b) { return {&b, true}; }
inline Binding inout(const Buffer& b) { return {&b, true}; }

// The workgroups of `size` invocations that cover `items` (one per item): the count every 1-D
// dispatch of a kernel with local size `size` passes.
inline uint32_t workgroups(uint64_t items, uint32_t size) { return (uint32_t)((items + size - 1) / size); }

struct DispatchTiming {
  std::string label;
  double ms = 0;
};

// What the recorder times on the GPU (only where the context has timestamps enabled).
enum class GpuTiming {
  none,          // no queries at all
  total,         // one pair around the whole submission: gpu_ms_total() only
  per_dispatch,  // a pair around every dispatch: timings() per label, and the total
};

// A layout transition of a whole single-level colour image, with the stages and accesses on both
// sides (the recorder's image copies and the heatmap's first clear use it).
void image_layout_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                          VkAccessFlags dst_access);

class Recorder {
 public:
  explicit Recorder(Context& ctx, GpuTiming timing = GpuTiming::per_dispatch);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Starts a new recording (the previous submission must have completed). A reusable recording
  // may be submitted any number of times after end().
  Status begin(bool reusable = false);
  // Records one dispatch of gx * gy * gz workgroups of kernel `k` with its push constants (the
  // struct PipelineCache::get<Push> named; workgroups() below counts groups).
  template <class Push>
  void dispatch(const Kernel<Push>& k, std::initializer_list<Binding> bindings, const Push& push, uint32_t gx,
                uint32_t gy = 1, uint32_t gz = 1, const char* label = nullptr) {
    dispatch_bytes(*k, std::vector<Binding>(bindings), &push, gx, gy, gz, label);
  }
  template <class Push>
  void dispatch(const Kernel<Push>& k, const std::vector<Binding>& bindings, const Push& push, uint32_t gx,
                uint32_t gy = 1, uint32_t gz = 1, const char* label = nullptr) {
    dispatch_bytes(*k, bindings, &push, gx, gy, gz, label);
  }
  void copy(const Buffer& src, const Buffer& dst, VkDeviceSize bytes, VkDeviceSize src_offset = 0,
            VkDeviceSize dst_offset = 0);
  void fill(const Buffer& dst, uint32_t value = 0);
  // Writes `bytes` (<= 65536, a multiple of 4) of host data into dst at record time
  // (vkCmdUpdateBuffer): ordered with the dispatches around it like any transfer write.
  void update(const Buffer& dst, const void* data, VkDeviceSize bytes, VkDeviceSize dst_offset = 0);
  // Copies a tightly packed RGBA8 buffer into a colour image that is sampled (by `reader` stages)
  // in SHADER_READ_ONLY_OPTIMAL before and after: the image is moved to TRANSFER_DST and back
  // around the copy, ordered after every earlier write to src and before the readers.
  void copy_to_image(const Buffer& src, VkImage image, uint32_t width, uint32_t height, VkPipelineStageFlags reader);
  // Ends the recording: makes every device write visible to the host. Reports any failure of the
  // recording (bad arguments, exhausted pools) deferred until now.
  Status end();
  // Submits the ended recording; its fence signals when it completes. At most one submission of
  // a recorder is in flight: submit() first waits for the previous one.
  Status submit();
  // Waits for the submission in flight (if any) and reads its timestamps.
  Status wait();
  bool in_flight() const { return in_flight_ || batch_ != nullptr; }
  // end() + submit() + wait(): the one-shot path.
  Status submit_and_wait();

  bool recording() const { return recording_; }
  bool recorded() const { return ended_; }
  uint32_t dispatch_count() const { return dispatches_; }
  uint32_t barrier_count() const { return barriers_; }
  // The distinct pipelines dispatched since begin(), in first-dispatch order (rfa-bench --stats
  // names the kernels a run used from this).
  const std::vector<const Pipeline*>& pipelines_used() const { return used_; }
  // Per-dispatch GPU times of the last completed submission (per_dispatch timing only).
  const std::vector<DispatchTiming>& timings() const { return timings_; }
  // GPU milliseconds of the last completed submission (0 when nothing was timed).
  double gpu_ms_total() const { return gpu_total_ms_; }

 private:
  // `push` holds p.push_bytes bytes.
  void dispatch_bytes(const Pipeline& p, const std::vector<Binding>& bindings, const void* push, uint32_t gx,
                      uint32_t gy, uint32_t gz, const char* label);
  friend class Batch;
  struct Access {
    bool read = false, written = false;
  };
  // `whole_arena`: a packed dispatch, whose one descriptor covers the whole arena; the validation
  // layer's synchronization checks (rightly, for what a descriptor may touch) see it read and write
  // every tensor, so it is ordered after everything pending and everything after it.
  void track(const std::vector<Binding>& bindings, bool whole_arena = false);
  // False (deferred_ set) when a descriptor set or a packed table could not be had.
  bool bind_descriptors(const Pipeline& p, const std::vector<Binding>& bindings);
  // A packed kernel's descriptors: the arena and a table of the buffers' offsets, written into a
  // slice of tables_ (false, with deferred_ set, on failure).
  bool packed_descriptors(const Pipeline& p, const std::vector<Binding>& bindings);
  Status grow_descriptor_pool();
  Status read_timings();
  Status prepare();  // the command pool, buffer, fence and query pool, made by begin() when missing

  Context& ctx_;
  GpuTiming timing_;
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
  std::vector<VkDescriptorBufferInfo> infos_;  // scratch of bind_descriptors (no per-dispatch allocation)
  std::vector<VkWriteDescriptorSet> writes_;
  // Packed kernels' offset tables (Pipeline::packed): host-written slices of these chunks, one per
  // dispatch, kept for as long as the recording is replayed and reused from the next begin().
  std::vector<Buffer> tables_;
  size_t table_chunk_ = 0;
  uint64_t table_used_ = 0;
  bool recording_ = false, ended_ = false, in_flight_ = false;
  bool fence_signaled_ = false;  // reset by the next submit() (reset_fence in recorder.cpp)
  Batch* batch_ = nullptr;  // the batch this recording was last submitted in, while in flight
  uint32_t dispatches_ = 0, barriers_ = 0;
  std::vector<DispatchTiming> timings_;
  std::vector<const Pipeline*> used_;
  std::vector<uint64_t> query_results_;
  double gpu_total_ms_ = 0;
  Status deferred_;  // a recording-time failure reported by end()
};

// Several ended recordings submitted together: one vkQueueSubmit, one fence (a viewer's frame:
// the step and the maps). Submission order inside the batch is the vector's order; each
// recording's leading barrier orders it after the ones before. At most one batch in flight.
class Batch {
 public:
  explicit Batch(Context& ctx);
  ~Batch();
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  // Waits for the previous batch (and for any earlier submission of these recorders) first.
  Status submit(const std::vector<Recorder*>& recs);
  bool in_flight() const { return in_flight_; }
  bool done();    // never blocks: true when nothing is in flight or the fence has signalled
  Status wait();  // blocks; then reads every member's timings
  void detach(Recorder* r);  // a member being destroyed: waits for the device, then forgets it

 private:
  Context& ctx_;
  VkFence fence_ = VK_NULL_HANDLE;  // made by the first submit()
  bool in_flight_ = false, fence_signaled_ = false;
  std::vector<Recorder*> members_;
};

}  // namespace rfa::gpu
