// Device memory: a few large blocks, each one VkDeviceMemory bound to one VkBuffer, sub-allocated
// first-fit. Tensors are (block buffer, offset, size) ranges, so descriptors need no per-tensor
// VkBuffer and allocation costs no driver call once a block exists. A budget caps the total.
#pragma once

#include "gpu/vk.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/capabilities.hpp"
#include "rfa/status.hpp"

namespace rfa::gpu {

class Context;
class Allocator;

enum class MemoryKind {
  device,    // device-local; host-mapped too when the device has unified memory
  upload,    // host-visible, coherent: staging for uploads
  readback,  // host-visible, coherent (cached where offered): staging for downloads
  // The one block of packed bindings (Capabilities::packed_bindings): every kind above is served
  // from it, so all of a kernel's tensors share one VkBuffer. Host-visible and coherent, device-
  // local where offered. Not requested by callers: the allocator uses it when the device packs.
  arena,
};

// A sub-allocation. Move-only; returns its range to the allocator when destroyed.
struct Buffer {
  VkBuffer vk = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, size = 0;
  uint8_t* mapped = nullptr;  // host pointer when the memory is host-visible
  uint64_t id = 0;            // unique per allocation: the recorder tracks hazards by it
  std::string label;
  Allocator* owner = nullptr;
  uint32_t block = 0;
  bool budgeted = false;  // device memory counted against the budget (MemoryKind::device)

  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }
  void release();
  bool valid() const { return vk != VK_NULL_HANDLE; }
};

// The memory type for a kind of buffer among `types` (those allowed by type_bits), or -1. Pure:
// tested on faked type lists. device: host-mapped device-local where `unified`, else device-local
// memory the host cannot map (ReBAR's host-visible window is left to uploads that want it);
// upload: host-visible coherent; readback: host-visible coherent and cached where offered.
int choose_memory_type(const std::vector<MemoryTypeInfo>& types, uint32_t type_bits, MemoryKind kind, bool unified);

class Allocator {
 public:
  Allocator(Context& ctx, uint64_t budget_bytes);
  ~Allocator();

  // A buffer of at least `bytes` (rounded to the storage-buffer alignment). Fails with
  // out_of_memory naming `what`, the request and the budget when the budget would be exceeded
  // (with packed bindings: when the arena is full, naming its size and why there is one).
  Result<Buffer> allocate(uint64_t bytes, MemoryKind kind, const std::string& what);

  uint64_t budget() const { return budget_; }
  uint64_t used_bytes() const;      // sub-allocated bytes of device memory now
  uint64_t peak_bytes() const;      // high-water mark of used_bytes since the last reset_peak
  uint64_t reserved_bytes() const;  // bytes of VkDeviceMemory held in blocks
  void reset_peak();
  void set_budget(uint64_t bytes) { budget_ = bytes; }

 private:
  friend struct Buffer;
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    uint8_t* mapped = nullptr;
    uint64_t size = 0;
    MemoryKind kind = MemoryKind::device;
    std::map<uint64_t, uint64_t> free;  // offset -> size
    uint64_t used = 0;
  };
  void free_range(uint32_t block, uint64_t offset, uint64_t size, bool budgeted);
  Result<uint32_t> new_block(uint64_t bytes, MemoryKind kind, const std::string& what);
  int find_memory_type(uint32_t type_bits, MemoryKind kind) const;

  Context& ctx_;
  uint64_t budget_;
  uint64_t used_ = 0, peak_ = 0, next_id_ = 1;
  std::vector<std::unique_ptr<Block>> blocks_;
  mutable std::mutex mutex_;
};

}  // namespace rfa::gpu
