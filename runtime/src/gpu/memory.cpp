#include "gpu/memory.hpp"

#include <algorithm>

#include "gpu/context.hpp"
#include "gpu/vk_check.hpp"

namespace rfa::gpu {
namespace {

// Big enough that a model's weights and activations need only a handful of blocks, small enough
// for integrated GPUs and maxStorageBufferRange (at least 128 MiB by the spec).
constexpr uint64_t kBlockBytes = 64ull << 20;
constexpr uint64_t kStagingBlockBytes = 16ull << 20;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    vk = o.vk;
    offset = o.offset;
    size = o.size;
    mapped = o.mapped;
    id = o.id;
    label = std::move(o.label);
    owner = o.owner;
    block = o.block;
    budgeted = o.budgeted;
    o.vk = VK_NULL_HANDLE;
    o.owner = nullptr;
    o.mapped = nullptr;
  }
  return *this;
}

void Buffer::release() {
  if (owner && vk) owner->free_range(block, offset, size, budgeted);
  vk = VK_NULL_HANDLE;
  owner = nullptr;
  mapped = nullptr;
}

Allocator::Allocator(Context& ctx, uint64_t budget_bytes) : ctx_(ctx), budget_(budget_bytes) {}

Allocator::~Allocator() {
  for (auto& b : blocks_) {
    if (b->buffer) vkDestroyBuffer(ctx_.device(), b->buffer, nullptr);
    if (b->memory) vkFreeMemory(ctx_.device(), b->memory, nullptr);
  }
}

int choose_memory_type(const std::vector<MemoryTypeInfo>& types, uint32_t type_bits, MemoryKind kind, bool unified) {
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // Preference lists, best first: (required flags, forbidden flags).
  std::vector<std::pair<VkMemoryPropertyFlags, VkMemoryPropertyFlags>> prefs;
  switch (kind) {
    case MemoryKind::device:
      if (unified) prefs.push_back({local | host, 0});
      prefs.push_back({local, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT});
      prefs.push_back({local, 0});
      prefs.push_back({0, 0});
      break;
    case MemoryKind::upload:
      prefs.push_back({host, 0});
      break;
    case MemoryKind::readback:
      prefs.push_back({host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0});
      prefs.push_back({host, 0});
      break;
    case MemoryKind::arena:
      prefs.push_back({local | host, 0});
      prefs.push_back({host, 0});
      break;
  }
  for (auto [want, avoid] : prefs)
    for (uint32_t i = 0; i < types.size() && i < 32; ++i)
      if ((type_bits & (1u << i)) && (types[i].flags & want) == want && (types[i].flags & avoid) == 0) return (int)i;
  return -1;
}

int Allocator::find_memory_type(uint32_t type_bits, MemoryKind kind) const {
  return choose_memory_type(ctx_.caps().memory_types, type_bits, kind, ctx_.caps().unified_memory);
}

Result<uint32_t> Allocator::new_block(uint64_t bytes, MemoryKind kind, const std::string& what) {
  auto b = std::make_unique<Block>();
  b->size = bytes;
  b->kind = kind;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  // Uniform too: the packed kernels' offset tables (gpu/recorder.cpp) are sub-allocated like tensors.
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  Status s = [&]() -> Status {
    VK_TRY(vkCreateBuffer(ctx_.device(), &bi, nullptr, &b->buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx_.device(), b->buffer, &req);
    int type = find_memory_type(req.memoryTypeBits, kind);
    if (type < 0) return Status(Code::device_error, "no suitable Vulkan memory type for " + what);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = (uint32_t)type;
    VkResult r = vkAllocateMemory(ctx_.device(), &ai, nullptr, &b->memory);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      return Status(Code::out_of_memory, std::string("out of ") + (r == VK_ERROR_OUT_OF_HOST_MEMORY ? "host" : "GPU") +
                                             " memory: could not allocate a " + mib(bytes) + " block for " + what +
                                             " (vkAllocateMemory failed with " + vk_result_name(r) + ")");
    VK_TRY(r);
    VK_TRY(vkBindBufferMemory(ctx_.device(), b->buffer, b->memory, 0));
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(ctx_.physical_device(), &mem);
    if (mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
      void* p = nullptr;
      VK_TRY(vkMapMemory(ctx_.device(), b->memory, 0, VK_WHOLE_SIZE, 0, &p));
      b->mapped = static_cast<uint8_t*>(p);
    }
    return Status::Ok();
  }();
  if (!s.ok()) {
    if (b->buffer) vkDestroyBuffer(ctx_.device(), b->buffer, nullptr);
    if (b->memory) vkFreeMemory(ctx_.device(), b->memory, nullptr);
    return ctx_.note(s);
  }
  b->free[0] = bytes;
  blocks_.push_back(std::move(b));
  return (uint32_t)(blocks_.size() - 1);
}

Result<Buffer> Allocator::allocate(uint64_t bytes, MemoryKind kind, const std::string& what) {
  RFA_TRY(ctx_.usable());
  const uint64_t align = std::max<uint64_t>(ctx_.caps().storage_buffer_alignment, 16);
  const uint64_t size = align_up(std::max<uint64_t>(bytes, 1), align);
  if (size > ctx_.caps().max_storage_buffer_range)
    return Status(Code::out_of_memory, "tensor '" + what + "' needs " + mib(size) +
                                           ", more than the device's maxStorageBufferRange of " +
                                           mib(ctx_.caps().max_storage_buffer_range));
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind == MemoryKind::device && used_ + size > budget_)
    return Status(Code::out_of_memory, "device memory budget exceeded: '" + what + "' needs " + mib(size) +
                                           ", " + mib(used_) + " of the " + mib(budget_) + " budget already in use");
  // Packed bindings: every kind comes from the one arena block (made on first use, never grown:
  // a kernel's descriptor covers all of it).
  const bool packed = ctx_.caps().packed_bindings;
  const MemoryKind block_kind = packed ? MemoryKind::arena : kind;
  for (uint32_t bi = 0;; ++bi) {
    if (bi == blocks_.size()) {
      if (packed && !blocks_.empty())
        return Status(Code::out_of_memory,
                      "'" + what + "' needs " + mib(size) + " and the packed-binding arena (" +
                          mib(ctx_.caps().packed_arena_bytes) + ", one descriptor's maxStorageBufferRange) has no room " +
                          "left: this device allows " + std::to_string(ctx_.caps().max_storage_buffers_per_stage) +
                          " storage buffers per stage (maxPerStageDescriptorStorageBuffers), so every tensor lives in one buffer");
      uint64_t block_bytes = packed ? ctx_.caps().packed_arena_bytes
                                    : std::max(kind == MemoryKind::device ? kBlockBytes : kStagingBlockBytes, size);
      auto nb = new_block(block_bytes, block_kind, what);
      if (!nb) return nb.status();
    }
    Block& b = *blocks_[bi];
    if (b.kind != block_kind) continue;
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < size) continue;
      Buffer out;
      out.vk = b.buffer;
      out.offset = it->first;
      out.size = size;
      out.mapped = b.mapped ? b.mapped + it->first : nullptr;
      out.id = next_id_++;
      out.label = what;
      out.owner = this;
      out.block = bi;
      uint64_t rest = it->second - size, off = it->first;
      b.free.erase(it);
      if (rest) b.free[off + size] = rest;
      b.used += size;
      if (kind == MemoryKind::device) {
        out.budgeted = true;
        used_ += size;
        peak_ = std::max(peak_, used_);
      }
      return out;
    }
  }
}

void Allocator::free_range(uint32_t block, uint64_t offset, uint64_t size, bool budgeted) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block& b = *blocks_[block];
  b.used -= size;
  if (budgeted) used_ -= size;
  // A block made for one oversized request (a big staging copy, a long session's caches) goes back
  // to the driver as soon as it is empty; standard-size blocks stay for reuse. The slot stays in
  // blocks_ (live buffers index it) with no free range, so nothing is ever placed in it again.
  const uint64_t standard = b.kind == MemoryKind::arena    ? b.size
                            : b.kind == MemoryKind::device ? kBlockBytes
                                                           : kStagingBlockBytes;
  if (b.used == 0 && b.size > standard) {
    vkDestroyBuffer(ctx_.device(), b.buffer, nullptr);
    vkFreeMemory(ctx_.device(), b.memory, nullptr);
    b.buffer = VK_NULL_HANDLE;
    b.memory = VK_NULL_HANDLE;
    b.mapped = nullptr;
    b.size = 0;
    b.free.clear();
    return;
  }
  auto it = b.free.emplace(offset, size).first;
  // Coalesce with the next and the previous free range.
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

uint64_t Allocator::used_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}
uint64_t Allocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
uint64_t Allocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t r = 0;
  for (auto& b : blocks_) r += b->size;
  return r;
}
void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = used_;
}

}  // namespace rfa::gpu
