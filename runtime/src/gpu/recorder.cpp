#include "gpu/recorder.hpp"

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/vk_check.hpp"

namespace rfa::gpu {
namespace {
constexpr uint32_t kMaxTimedDispatches = 2048;
constexpr uint32_t kSetsPerPool = 256;
}  // namespace

Recorder::Recorder(Context& ctx) : ctx_(ctx) {
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = ctx.queue_family();
  if (vkCreateCommandPool(ctx.device(), &pi, nullptr, &pool_) != VK_SUCCESS) {
    deferred_ = Status(Code::device_error, "vkCreateCommandPool failed for a recorder");
    return;
  }
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vkAllocateCommandBuffers(ctx.device(), &ai, &cb_);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vkCreateFence(ctx.device(), &fi, nullptr, &fence_);
  if (ctx.timestamps_enabled()) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * kMaxTimedDispatches;
    if (vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries_) == VK_SUCCESS) query_capacity_ = qi.queryCount;
  }
  if (ctx.caps().push_descriptors)
    push_descriptor_fn_ = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(ctx.device(), "vkCmdPushDescriptorSetKHR");
}

Recorder::~Recorder() {
  VkDevice dev = ctx_.device();
  if (recording_ && cb_) vkEndCommandBuffer(cb_);
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(dev, p, nullptr);
  if (queries_) vkDestroyQueryPool(dev, queries_, nullptr);
  if (fence_) vkDestroyFence(dev, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(dev, pool_, nullptr);
}

Status Recorder::begin() {
  RFA_TRY(deferred_);
  RFA_TRY(ctx_.usable());
  if (recording_) return Status(Code::invalid_argument, "Recorder::begin called twice without submit");
  VK_TRY(vkResetCommandBuffer(cb_, 0));
  for (VkDescriptorPool p : descriptor_pools_) vkResetDescriptorPool(ctx_.device(), p, 0);
  current_pool_ = 0;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_TRY(vkBeginCommandBuffer(cb_, &bi));
  if (queries_) vkCmdResetQueryPool(cb_, queries_, 0, query_capacity_);
  queries_used_ = 0;
  query_labels_.clear();
  pending_.clear();
  dispatches_ = barriers_ = 0;
  recording_ = true;
  return Status::Ok();
}

void Recorder::track(const std::vector<Binding>& bindings) {
  bool hazard = false;
  for (const Binding& b : bindings) {
    auto it = pending_.find(b.buffer->id);
    if (it == pending_.end()) continue;
    if (it->second.written || (b.write && it->second.read)) hazard = true;
  }
  if (hazard) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    // Both stages on each side: the access masks name shader and transfer accesses alike.
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cb_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    pending_.clear();
    ++barriers_;
  }
  for (const Binding& b : bindings) {
    Access& a = pending_[b.buffer->id];
    if (b.write) a.written = true;
    else a.read = true;
  }
}

Status Recorder::grow_descriptor_pool() {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 8};
  VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  ci.maxSets = kSetsPerPool;
  ci.poolSizeCount = 1;
  ci.pPoolSizes = &size;
  VkDescriptorPool p = VK_NULL_HANDLE;
  VK_TRY(vkCreateDescriptorPool(ctx_.device(), &ci, nullptr, &p));
  descriptor_pools_.push_back(p);
  return Status::Ok();
}

void Recorder::bind_descriptors(const Pipeline& p, const std::vector<Binding>& bindings) {
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = {bindings[i].buffer->vk, bindings[i].buffer->offset, bindings[i].buffer->size};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = (uint32_t)i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  if (p.push_descriptors && push_descriptor_fn_) {
    push_descriptor_fn_(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, (uint32_t)writes.size(), writes.data());
    return;
  }
  // Pooled sets: allocated from per-recorder pools that are reset when the next recording begins.
  VkDescriptorSet set = VK_NULL_HANDLE;
  for (;;) {
    if (current_pool_ == descriptor_pools_.size()) {
      Status s = grow_descriptor_pool();
      if (!s.ok()) {
        deferred_ = s;
        return;
      }
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pools_[current_pool_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.set_layout;
    if (vkAllocateDescriptorSets(ctx_.device(), &ai, &set) == VK_SUCCESS) break;
    ++current_pool_;
  }
  for (auto& w : writes) w.dstSet = set;
  vkUpdateDescriptorSets(ctx_.device(), (uint32_t)writes.size(), writes.data(), 0, nullptr);
  vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
}

void Recorder::dispatch(const Pipeline& p, std::initializer_list<Binding> bindings, const void* push, uint32_t gx,
                        uint32_t gy, uint32_t gz, const char* label) {
  dispatch(p, std::vector<Binding>(bindings), push, gx, gy, gz, label);
}

void Recorder::dispatch(const Pipeline& p, const std::vector<Binding>& bindings, const void* push, uint32_t gx,
                        uint32_t gy, uint32_t gz, const char* label) {
  if (!recording_) {
    deferred_ = Status(Code::invalid_argument, "Recorder::dispatch outside begin()/submit_and_wait()");
    return;
  }
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
  track(bindings);
  vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  bind_descriptors(p, bindings);
  if (p.push_bytes) vkCmdPushConstants(cb_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push);
  bool timed = queries_ && queries_used_ + 2 <= query_capacity_;
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

Status Recorder::submit_and_wait() {
  if (!recording_) return Status(Code::invalid_argument, "Recorder::submit_and_wait without begin()");
  // Host reads after the fence see every device write.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  recording_ = false;
  VK_TRY(vkEndCommandBuffer(cb_));
  if (!deferred_.ok()) {
    Status s = deferred_;
    deferred_ = Status::Ok();
    return s;
  }
  RFA_TRY(ctx_.usable());
  Status s = [&]() -> Status {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb_;
    {
      std::lock_guard<std::mutex> lock(ctx_.queue_mutex());
      VK_TRY(vkQueueSubmit(ctx_.queue(), 1, &si, fence_));
    }
    VK_TRY(vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX));
    VK_TRY(vkResetFences(ctx_.device(), 1, &fence_));
    return Status::Ok();
  }();
  if (!s.ok()) return ctx_.note(s);

  timings_.clear();
  if (queries_used_) {
    std::vector<uint64_t> ts(queries_used_);
    VK_TRY(vkGetQueryPoolResults(ctx_.device(), queries_, 0, queries_used_, ts.size() * 8, ts.data(), 8,
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    const uint32_t bits = ctx_.caps().timestamp_valid_bits;
    const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    for (uint32_t i = 0; i < queries_used_ / 2; ++i) {
      uint64_t t0 = ts[2 * i] & mask, t1 = ts[2 * i + 1] & mask;
      double ms = (double)((t1 - t0) & mask) * ctx_.caps().timestamp_period_ns * 1e-6;
      timings_.push_back({query_labels_[i], ms});
    }
  }
  return Status::Ok();
}

double Recorder::gpu_ms_total() const {
  double t = 0;
  for (auto& x : timings_) t += x.ms;
  return t;
}

}  // namespace rfa::gpu
