#include "gpu/recorder.hpp"

#include <algorithm>
#include <cstring>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/vk_check.hpp"

namespace rfa::gpu {
namespace {
constexpr uint32_t kMaxTimedDispatches = 2048;
constexpr uint32_t kSetsPerPool = 256;
// Shader and transfer accesses on both sides of every barrier the recorder inserts.
constexpr VkPipelineStageFlags kStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kAll = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                               VK_ACCESS_TRANSFER_WRITE_BIT;

// The fence is reset right before the submission that will signal it, not after the wait that saw
// it signalled: a failed reset then fails that submission, with nothing submitted and the
// recording intact, and the next submit() tries the reset again.
Status reset_fence(Context& ctx, VkFence fence, bool* signaled) {
  if (!*signaled) return Status::Ok();
  const VkResult r = vkResetFences(ctx.device(), 1, &fence);
  if (r != VK_SUCCESS) return ctx.note(vk_status(r, "vkResetFences", __FILE__, __LINE__));
  *signaled = false;
  return Status::Ok();
}
}  // namespace

Recorder::Recorder(Context& ctx, GpuTiming timing) : ctx_(ctx), timing_(ctx.timestamps_enabled() ? timing : GpuTiming::none) {}

// The recorder's Vulkan objects, made on the first begin() (and again by a later begin() after a
// failure: a pool or fence the driver could not give once is asked for again, so an
// out-of-memory leaves the recorder usable once memory is back).
Status Recorder::prepare() {
  VkDevice dev = ctx_.device();
  if (!pool_) {
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = ctx_.queue_family();
    VK_TRY(vkCreateCommandPool(dev, &pi, nullptr, &pool_));
  }
  if (!cb_) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VK_TRY(vkAllocateCommandBuffers(dev, &ai, &cb_));
  }
  if (!fence_) {
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(dev, &fi, nullptr, &fence_));
  }
  if (timing_ != GpuTiming::none && !queries_) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = timing_ == GpuTiming::per_dispatch ? 2 * kMaxTimedDispatches + 2 : 2;
    // Timing is optional: a device that cannot give a query pool runs untimed.
    if (vkCreateQueryPool(dev, &qi, nullptr, &queries_) == VK_SUCCESS) query_capacity_ = qi.queryCount;
    else timing_ = GpuTiming::none;
  }
  if (ctx_.caps().push_descriptors && !push_descriptor_fn_)
    push_descriptor_fn_ = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(dev, "vkCmdPushDescriptorSetKHR");
  return Status::Ok();
}

Recorder::~Recorder() {
  if (batch_) batch_->detach(this);  // waits for the batch's fence, whatever the context's state
  VkDevice dev = ctx_.device();
  // Whatever the context's state (a lost device finishes nothing more, and its wait returns at
  // once), nothing is destroyed while the device may still use it.
  if (in_flight_ && fence_) vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX);
  if (recording_ && cb_) vkEndCommandBuffer(cb_);
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(dev, p, nullptr);
  if (queries_) vkDestroyQueryPool(dev, queries_, nullptr);
  if (fence_) vkDestroyFence(dev, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(dev, pool_, nullptr);
}

Status Recorder::begin(bool reusable) {
  RFA_TRY(ctx_.usable());
  if (recording_) return Status(Code::invalid_argument, "Recorder::begin called twice without end()");
  RFA_TRY(wait());
  RFA_TRY(prepare());
  ended_ = false;
  deferred_ = Status::Ok();
  VK_TRY(vkResetCommandBuffer(cb_, 0));
  for (VkDescriptorPool p : descriptor_pools_) VK_TRY(vkResetDescriptorPool(ctx_.device(), p, 0));
  current_pool_ = 0;
  table_chunk_ = 0;
  table_used_ = 0;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = reusable ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_TRY(vkBeginCommandBuffer(cb_, &bi));
  // Earlier submissions on the queue may still use buffers this one writes (or write what it
  // reads): wait for all of them and make their writes visible.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = kWrites;
  mb.dstAccessMask = kAll;
  vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, kStages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  queries_used_ = 0;
  if (queries_) {
    vkCmdResetQueryPool(cb_, queries_, 0, query_capacity_);
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);  // the submission's start
    queries_used_ = 2;  // query 1 is the submission's end, written by end()
  }
  query_labels_.clear();
  used_.clear();
  pending_.clear();
  dispatches_ = barriers_ = 0;
  recording_ = true;
  ended_ = false;
  return Status::Ok();
}

void Recorder::track(const std::vector<Binding>& bindings, bool whole_arena) {
  // The pending entry of a packed dispatch: it may have touched any range of the arena.
  constexpr uint64_t kArena = UINT64_MAX;
  bool hazard = whole_arena ? !pending_.empty() : pending_.count(kArena) != 0;
  for (const Binding& b : bindings) {
    auto it = pending_.find(b.buffer->id);
    if (it == pending_.end()) continue;
    if (it->second.written || (b.write && it->second.read)) hazard = true;
  }
  if (hazard) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = kWrites;
    mb.dstAccessMask = kAll;
    vkCmdPipelineBarrier(cb_, kStages, kStages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    pending_.clear();
    ++barriers_;
  }
  for (const Binding& b : bindings) {
    Access& a = pending_[b.buffer->id];
    if (b.write) a.written = true;
    else a.read = true;
  }
  if (whole_arena) pending_[kArena] = {true, true};
}

Status Recorder::grow_descriptor_pool() {
  // Uniform buffers: a packed kernel's offset table (one per set).
  VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 16},
                                   {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSetsPerPool}};
  VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  ci.maxSets = kSetsPerPool;
  ci.poolSizeCount = 2;
  ci.pPoolSizes = sizes;
  VkDescriptorPool p = VK_NULL_HANDLE;
  VK_TRY(vkCreateDescriptorPool(ctx_.device(), &ci, nullptr, &p));
  descriptor_pools_.push_back(p);
  return Status::Ok();
}

bool Recorder::packed_descriptors(const Pipeline& p, const std::vector<Binding>& bindings) {
  // Every buffer must be a range of the one arena block (gpu/memory.cpp serves every kind from it
  // when the device packs bindings), at an offset a whole number of its elements (16-byte aligned).
  const VkBuffer arena = bindings.empty() ? VK_NULL_HANDLE : bindings[0].buffer->vk;
  uint32_t words[kPackedMaxSlots] = {};
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Buffer& b = *bindings[i].buffer;
    if (b.vk != arena || b.offset % 16 != 0 || b.offset / 4 > UINT32_MAX) {
      deferred_ = Status(Code::device_error, "packed dispatch of " + p.shader + ": buffer '" + b.label +
                                                 "' is not a 16-byte aligned range of the packed-binding arena");
      return false;
    }
    words[i] = (uint32_t)(b.offset / 4);
  }
  // The table's slice: uniform-buffer aligned, in chunks the allocator serves (from the arena too).
  const uint64_t align = std::max<uint64_t>(ctx_.caps().uniform_buffer_alignment, 16);
  const uint64_t stride = (kPackedTableBytes + align - 1) / align * align;
  constexpr uint64_t kChunkBytes = 16 * 1024;
  VkBuffer table = VK_NULL_HANDLE;
  VkDeviceSize table_offset = 0;
  while (table == VK_NULL_HANDLE) {
    if (table_chunk_ == tables_.size()) {
      auto nb = ctx_.allocator().allocate(kChunkBytes + align, MemoryKind::upload, "packed binding tables");
      if (!nb) {
        deferred_ = nb.status();
        return false;
      }
      tables_.push_back(std::move(*nb));
    }
    Buffer& chunk = tables_[table_chunk_];
    const uint64_t start = (chunk.offset + table_used_ + align - 1) / align * align - chunk.offset;
    if (start + kPackedTableBytes > chunk.size || !chunk.mapped) {
      ++table_chunk_;
      table_used_ = 0;
      continue;
    }
    std::memcpy(chunk.mapped + start, words, sizeof words);
    table = chunk.vk;
    table_offset = chunk.offset + start;
    table_used_ = start + stride;
  }
  infos_.resize(2);
  writes_.resize(2);
  infos_[0] = {arena, 0, VK_WHOLE_SIZE};
  infos_[1] = {table, table_offset, kPackedTableBytes};
  for (uint32_t i = 0; i < 2; ++i) {
    writes_[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes_[i].dstBinding = i;
    writes_[i].descriptorCount = 1;
    writes_[i].descriptorType = i == 0 ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    writes_[i].pBufferInfo = &infos_[i];
  }
  return true;
}

bool Recorder::bind_descriptors(const Pipeline& p, const std::vector<Binding>& bindings) {
  if (p.packed) {
    if (!packed_descriptors(p, bindings)) return false;
  } else {
    infos_.resize(bindings.size());
    writes_.resize(bindings.size());
    for (size_t i = 0; i < bindings.size(); ++i) {
      infos_[i] = {bindings[i].buffer->vk, bindings[i].buffer->offset, bindings[i].buffer->size};
      writes_[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes_[i].dstBinding = (uint32_t)i;
      writes_[i].descriptorCount = 1;
      writes_[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes_[i].pBufferInfo = &infos_[i];
    }
  }
  if (p.push_descriptors && push_descriptor_fn_) {
    push_descriptor_fn_(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, (uint32_t)writes_.size(), writes_.data());
    return true;
  }
  // Pooled sets: allocated from per-recorder pools that are reset when the next recording begins
  // (a reusable recording keeps its sets for as long as it is replayed).
  VkDescriptorSet set = VK_NULL_HANDLE;
  for (;;) {
    const bool fresh = current_pool_ == descriptor_pools_.size();
    if (fresh) {
      Status s = grow_descriptor_pool();
      if (!s.ok()) {
        deferred_ = s;
        return false;
      }
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pools_[current_pool_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.set_layout;
    const VkResult r = vkAllocateDescriptorSets(ctx_.device(), &ai, &set);
    if (r == VK_SUCCESS) break;
    // A full pool sends the set to the next one; any other failure, or a fresh pool that cannot
    // hold one set, is the recording's error (never a loop that grows pools without end).
    if (fresh || (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)) {
      deferred_ = vk_status(r, "vkAllocateDescriptorSets", __FILE__, __LINE__);
      return false;
    }
    ++current_pool_;
  }
  for (auto& w : writes_) w.dstSet = set;
  vkUpdateDescriptorSets(ctx_.device(), (uint32_t)writes_.size(), writes_.data(), 0, nullptr);
  vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  return true;
}

void Recorder::dispatch_bytes(const Pipeline& p, const std::vector<Binding>& bindings, const void* push, uint32_t gx,
                              uint32_t gy, uint32_t gz, const char* label) {
  if (!recording_) {
    deferred_ = Status(Code::invalid_argument, "Recorder::dispatch outside begin()/end()");
    return;
  }
  if (!deferred_.ok()) return;  // the recording already failed: end() says why
  if (bindings.size() != p.bindings) {
    deferred_ = Status(Code::invalid_argument, "dispatch of " + p.shader + " with " + std::to_string(bindings.size()) +
                                                   " buffers; the pipeline has " + std::to_string(p.bindings));
    return;
  }
  if (gx == 0 || gy == 0 || gz == 0) return;  // nothing to do (empty tensor)
  const auto& lim = ctx_.caps().max_workgroup_count;
  if (gx > lim[0] || gy > lim[1] || gz > lim[2]) {
    deferred_ = Status(Code::unsupported, "dispatch of " + p.shader + " needs " + std::to_string(gx) + "x" +
                                              std::to_string(gy) + "x" + std::to_string(gz) +
                                              " workgroups, beyond the device's maxComputeWorkGroupCount");
    return;
  }
  track(bindings, p.packed);
  if (std::find(used_.begin(), used_.end(), &p) == used_.end()) used_.push_back(&p);
  vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  // A dispatch whose descriptors could not be bound is not recorded: end() reports why, and the
  // recording is never submitted.
  if (!bind_descriptors(p, bindings)) return;
  if (p.push_bytes) vkCmdPushConstants(cb_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push);
  const bool timed = timing_ == GpuTiming::per_dispatch && queries_used_ + 2 <= query_capacity_;
  if (timed) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, queries_used_);
  vkCmdDispatch(cb_, gx, gy, gz);
  if (timed) {
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, queries_used_ + 1);
    queries_used_ += 2;
    query_labels_.push_back(label ? label : p.shader);
  }
  ++dispatches_;
}

void Recorder::copy(const Buffer& src, const Buffer& dst, VkDeviceSize bytes, VkDeviceSize src_offset,
                    VkDeviceSize dst_offset) {
  if (!recording_ || bytes == 0) return;
  if (src_offset + bytes > src.size || dst_offset + bytes > dst.size) {
    deferred_ = Status(Code::invalid_argument, "Recorder::copy of " + std::to_string(bytes) + " bytes from '" +
                                                   src.label + "' to '" + dst.label + "' runs past a buffer");
    return;
  }
  track({in(src), out(dst)});
  VkBufferCopy c{src.offset + src_offset, dst.offset + dst_offset, bytes};
  vkCmdCopyBuffer(cb_, src.vk, dst.vk, 1, &c);
}

void Recorder::fill(const Buffer& dst, uint32_t value) {
  if (!recording_) return;
  track({out(dst)});
  vkCmdFillBuffer(cb_, dst.vk, dst.offset, dst.size, value);
}

void Recorder::update(const Buffer& dst, const void* data, VkDeviceSize bytes, VkDeviceSize dst_offset) {
  if (!recording_ || bytes == 0) return;
  if (bytes > 65536 || bytes % 4 || dst_offset % 4 || dst_offset + bytes > dst.size) {
    deferred_ = Status(Code::invalid_argument, "Recorder::update of " + std::to_string(bytes) + " bytes into '" +
                                                   dst.label + "' (at most 65536, multiples of 4, inside the buffer)");
    return;
  }
  track({out(dst)});
  vkCmdUpdateBuffer(cb_, dst.vk, dst.offset + dst_offset, bytes, data);
}

Status Recorder::end() {
  if (!recording_) return Status(Code::invalid_argument, "Recorder::end without begin()");
  // Host reads after the fence see every device write.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = kWrites;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb_, kStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  if (queries_) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
  recording_ = false;
  const VkResult r = vkEndCommandBuffer(cb_);
  Status s = deferred_;
  deferred_ = Status::Ok();
  // A failed end leaves the command buffer invalid: begin() resets it before the next recording.
  if (r != VK_SUCCESS) return ctx_.note(vk_status(r, "vkEndCommandBuffer", __FILE__, __LINE__));
  RFA_TRY(s);
  ended_ = true;
  return Status::Ok();
}

Status Recorder::submit() {
  if (!ended_) return Status(Code::invalid_argument, "Recorder::submit of a recording that did not end cleanly");
  RFA_TRY(wait());
  RFA_TRY(ctx_.usable());
  RFA_TRY(reset_fence(ctx_, fence_, &fence_signaled_));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb_;
  VkResult r;
  {
    std::lock_guard<std::mutex> lock(ctx_.queue_mutex());
    r = vkQueueSubmit(ctx_.queue(), 1, &si, fence_);
  }
  if (r != VK_SUCCESS) return ctx_.note(vk_status(r, "vkQueueSubmit", __FILE__, __LINE__));
  in_flight_ = true;
  return Status::Ok();
}

Status Recorder::wait() {
  if (batch_) return batch_->wait();
  if (!in_flight_) return Status::Ok();
  // After a loss nothing is waited for (the submission stays in flight for the destructor).
  RFA_TRY(ctx_.usable());
  const VkResult r = vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return ctx_.note(vk_wait_status(r, "vkWaitForFences", __FILE__, __LINE__));
  in_flight_ = false;
  fence_signaled_ = true;
  return read_timings();
}

void image_layout_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                          VkAccessFlags dst_access) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.oldLayout = from;
  b.newLayout = to;
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, nullptr, 0, nullptr, 1, &b);
}

void Recorder::copy_to_image(const Buffer& src, VkImage image, uint32_t width, uint32_t height,
                             VkPipelineStageFlags reader) {
  if (!recording_) return;
  track({in(src)});  // a barrier first when src was written since the last one
  // Earlier readers (a previous frame's drawing) finish before the copy overwrites the image.
  image_layout_barrier(cb_, image, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, reader,
                       VK_ACCESS_SHADER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  VkBufferImageCopy c{};
  c.bufferOffset = src.offset;
  c.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  c.imageExtent = {width, height, 1};
  vkCmdCopyBufferToImage(cb_, src.vk, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &c);
  image_layout_barrier(cb_, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, reader, VK_ACCESS_SHADER_READ_BIT);
}

Status Recorder::submit_and_wait() {
  RFA_TRY(end());
  RFA_TRY(submit());
  return wait();
}

Status Recorder::read_timings() {
  timings_.clear();
  gpu_total_ms_ = 0;
  if (!queries_used_) return Status::Ok();
  query_results_.resize(queries_used_);
  uint64_t* ts = query_results_.data();
  const VkResult r = vkGetQueryPoolResults(ctx_.device(), queries_, 0, queries_used_, queries_used_ * 8, ts, 8,
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  // Timings are optional (as a device without a query pool runs untimed): the submission's results
  // stand when only its timestamps cannot be read. A lost device is reported.
  if (r == VK_ERROR_DEVICE_LOST) return ctx_.note(vk_status(r, "vkGetQueryPoolResults", __FILE__, __LINE__));
  if (r != VK_SUCCESS) return Status::Ok();
  const uint32_t bits = ctx_.caps().timestamp_valid_bits;
  const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  const double to_ms = ctx_.caps().timestamp_period_ns * 1e-6;
  auto span_ms = [&](uint32_t q) { return (double)(((ts[q + 1] & mask) - (ts[q] & mask)) & mask) * to_ms; };
  gpu_total_ms_ = span_ms(0);
  for (uint32_t q = 2; q + 1 < queries_used_; q += 2) timings_.push_back({query_labels_[q / 2 - 1], span_ms(q)});
  return Status::Ok();
}

Batch::Batch(Context& ctx) : ctx_(ctx) {}

Batch::~Batch() {
  if (in_flight_) {
    vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX);
    for (Recorder* r : members_) r->batch_ = nullptr;
  }
  if (fence_) vkDestroyFence(ctx_.device(), fence_, nullptr);
}

Status Batch::submit(const std::vector<Recorder*>& recs) {
  RFA_TRY(wait());
  if (!fence_) {  // made on first use, and asked for again after a failure
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(ctx_.device(), &fi, nullptr, &fence_));
  }
  std::vector<VkCommandBuffer> cbs;
  for (Recorder* r : recs) {
    if (!r->ended_) return Status(Code::invalid_argument, "Batch::submit of a recording that did not end cleanly");
    RFA_TRY(r->wait());  // its own earlier submission, if any
    cbs.push_back(r->cb_);
  }
  if (cbs.empty()) return Status::Ok();
  RFA_TRY(ctx_.usable());
  RFA_TRY(reset_fence(ctx_, fence_, &fence_signaled_));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = (uint32_t)cbs.size();
  si.pCommandBuffers = cbs.data();
  VkResult res;
  {
    std::lock_guard<std::mutex> lock(ctx_.queue_mutex());
    res = vkQueueSubmit(ctx_.queue(), 1, &si, fence_);
  }
  if (res != VK_SUCCESS) return ctx_.note(vk_status(res, "vkQueueSubmit", __FILE__, __LINE__));
  in_flight_ = true;
  members_ = recs;
  for (Recorder* r : recs) r->batch_ = this;
  return Status::Ok();
}

void Batch::detach(Recorder* r) {
  // A member destroyed while the batch may still be in flight (after a failed wait the batch stays
  // in flight): the device lets go first, then the batch forgets it.
  if (in_flight_ && fence_) vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX);
  members_.erase(std::remove(members_.begin(), members_.end(), r), members_.end());
  r->batch_ = nullptr;
}

bool Batch::done() {
  if (!in_flight_ || ctx_.lost()) return true;  // a lost device: wait() reports it
  const VkResult r = vkGetFenceStatus(ctx_.device(), fence_);
  if (r == VK_NOT_READY) return false;
  // Signalled, or an error that wait() meets again and reports (never polled forever).
  if (r != VK_SUCCESS) ctx_.note(vk_wait_status(r, "vkGetFenceStatus", __FILE__, __LINE__));
  return true;
}

Status Batch::wait() {
  if (!in_flight_) return Status::Ok();
  // After a loss nothing is waited for; the destructor still waits for the device to let go.
  RFA_TRY(ctx_.usable());
  const VkResult waited = vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX);
  if (waited != VK_SUCCESS) return ctx_.note(vk_wait_status(waited, "vkWaitForFences", __FILE__, __LINE__));
  in_flight_ = false;
  fence_signaled_ = true;
  for (Recorder* r : members_) r->batch_ = nullptr;
  Status first;
  for (Recorder* r : members_) {
    Status t = r->read_timings();
    if (first.ok() && !t.ok()) first = t;
  }
  members_.clear();
  return first;
}

}  // namespace rfa::gpu
