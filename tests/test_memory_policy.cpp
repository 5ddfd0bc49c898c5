// Where tensors live, decided from a capability struct alone: faked devices (a discrete GPU with
// resizable BAR, one with the small 256 MiB BAR window, an integrated GPU, a CPU device) get the
// memory types the runtime should pick. No Vulkan device is needed.
#include <doctest/doctest.h>

#include "gpu/capabilities.hpp"
#include "gpu/memory.hpp"

using namespace rfa::gpu;

namespace {

constexpr VkMemoryPropertyFlags L = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, V = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                C = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, K = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

Capabilities fake(VkPhysicalDeviceType type, std::vector<MemoryHeapInfo> heaps, std::vector<MemoryTypeInfo> types) {
  Capabilities c;
  c.device_type = type;
  c.heaps = std::move(heaps);
  c.memory_types = std::move(types);
  c.unified_memory = choose_unified_memory(c);
  return c;
}

int pick(const Capabilities& c, MemoryKind kind) { return choose_memory_type(c.memory_types, ~0u, kind, c.unified_memory); }

}  // namespace

TEST_CASE("a discrete GPU with resizable BAR keeps tensors out of the host-visible heap") {
  // As an H100 with ReBAR reports: heap 0 = 80 GiB VRAM, heap 1 = system RAM; the host-visible
  // device-local type listed FIRST, so a first-match search would put every tensor there.
  Capabilities c = fake(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, {{80ull << 30, true}, {64ull << 30, false}},
                        {{L | V | C, 0}, {L, 0}, {V | C, 1}, {V | C | K, 1}});
  CHECK_FALSE(c.unified_memory);
  CHECK(pick(c, MemoryKind::device) == 1);    // plain VRAM
  CHECK(pick(c, MemoryKind::upload) == 0);    // the first host-visible coherent type
  CHECK(pick(c, MemoryKind::readback) == 3);  // host-cached system memory
}

TEST_CASE("a discrete GPU with the small BAR window") {
  Capabilities c = fake(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, {{16ull << 30, true}, {32ull << 30, false}, {256ull << 20, true}},
                        {{L, 0}, {V | C, 1}, {V | C | K, 1}, {L | V | C, 2}});
  CHECK_FALSE(c.unified_memory);
  CHECK(pick(c, MemoryKind::device) == 0);
  CHECK(pick(c, MemoryKind::readback) == 2);
}

TEST_CASE("an integrated GPU maps its device memory") {
  Capabilities c = fake(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, {{8ull << 30, true}}, {{L, 0}, {L | V | C, 0}, {L | V | C | K, 0}});
  CHECK(c.unified_memory);
  CHECK(pick(c, MemoryKind::device) == 1);
  CHECK(pick(c, MemoryKind::readback) == 2);
  // An integrated GPU without a host-visible device-local type is not unified.
  Capabilities d = fake(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, {{8ull << 30, true}, {8ull << 30, false}}, {{L, 0}, {V | C, 1}});
  CHECK_FALSE(d.unified_memory);
  CHECK(pick(d, MemoryKind::device) == 0);
}

TEST_CASE("a CPU device (lavapipe) is all one memory") {
  Capabilities c = fake(VK_PHYSICAL_DEVICE_TYPE_CPU, {{24ull << 30, true}}, {{L | V | C | K, 0}});
  CHECK(c.unified_memory);
  CHECK(pick(c, MemoryKind::device) == 0);
  CHECK(pick(c, MemoryKind::upload) == 0);
  CHECK(pick(c, MemoryKind::readback) == 0);
  // type_bits exclude a type: no match is -1, never a wrong type.
  CHECK(choose_memory_type(c.memory_types, 0u, MemoryKind::device, true) == -1);
}
