// Compute pipelines, created lazily from (shader name, specialization constants) and cached.
// Every binding is a storage buffer at set 0, binding i; push constants start at offset 0. The
// binding count and the push block's size are read from the shader's SPIR-V (gpu/spirv_reflect.hpp);
// the caller names its push struct, whose size must equal the block's.
//
// Packed bindings (Capabilities::packed_bindings): a shader that binds more storage buffers than
// the device allows per stage is built from its `<name>_packed` variant (cmake/pack_bindings.py):
// binding 0 is the arena buffer that holds every tensor, binding 1 a uniform table of the tensors'
// offsets in the shader's binding order. Callers do not see the difference: they bind the same
// buffers, and the recorder fills the table (Pipeline::packed).
#pragma once

#include "gpu/vk.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/spirv_reflect.hpp"
#include "rfa/status.hpp"

namespace rfa::gpu {

class Context;
struct Capabilities;

// The limit checks every pipeline passes before it is created (issue 21): storage buffers per stage
// and per set, then the specialized workgroup size, shared memory and SPIR-V capabilities against
// the (profile-intersected) Capabilities. Each refusal is Code::unsupported naming the Vulkan limit
// or feature. Public so a session can check the kernels it will use when it is created.
Status check_bindings(const Capabilities& c, const char* shader, uint32_t bindings);
Status check_footprint(const Capabilities& c, const char* shader, const ShaderFootprint& f);
// Every OpCapability and OpExtension of a module against what the context enabled; one the runtime
// does not know is refused too.
Status check_capabilities(const Capabilities& c, const char* shader, const std::vector<uint32_t>& capabilities,
                          const std::vector<std::string>& extensions = {});
std::string profile_note(const Capabilities& c);  // ", device profile NAME" or ""
// The checks that do not depend on specialization (bindings, push constant bytes, SPIR-V
// capabilities), for a shader by
// name: what a session runs at creation over the kernels it will use, so that a device that cannot
// bind them refuses the session instead of its first step.
Status check_shader_interface(const Capabilities& c, const char* shader);
// The most storage buffers any compiled kernel binds (its plain variant): a device that allows
// fewer per stage packs bindings.
uint32_t most_storage_buffers();
// The offsets a packed kernel's table holds (cmake/pack_bindings.py's TABLE_VEC4S * 4).
constexpr uint32_t kPackedMaxSlots = 32;
constexpr uint32_t kPackedTableBytes = kPackedMaxSlots * 4;

// The specialization vector. Kernels with many constants set them by id (the names of
// shaders/common/kernel_ids.h, which their shaders declare too); kernels with one or two append
// them in id order (constant_id i is the i-th value). Ids left out below the highest one set make
// the pipeline refuse the vector (missing()).
class SpecConstants {
 public:
  SpecConstants& set(uint32_t id, uint32_t v) {
    if (id >= values_.size()) values_.resize(id + 1, 0), given_.resize(id + 1, false);
    values_[id] = v;
    given_[id] = true;
    return *this;
  }
  SpecConstants& set_flag(uint32_t id, bool v) { return set(id, v ? 1u : 0u); }  // a GLSL `const bool`
  SpecConstants& set_f32(uint32_t id, float v) { uint32_t u; std::memcpy(&u, &v, 4); return set(id, u); }
  SpecConstants& u32(uint32_t v) { return set((uint32_t)values_.size(), v); }
  SpecConstants& i32(int32_t v) { uint32_t u; std::memcpy(&u, &v, 4); return u32(u); }
  SpecConstants& f32(float v) { uint32_t u; std::memcpy(&u, &v, 4); return u32(u); }
  SpecConstants& flag(bool v) { return u32(v ? 1u : 0u); }
  const std::vector<uint32_t>& values() const { return values_; }
  // The lowest id below the highest set that was never set, or -1.
  int64_t missing() const {
    for (size_t i = 0; i < given_.size(); ++i)
      if (!given_[i]) return (int64_t)i;
    return -1;
  }

 private:
  std::vector<uint32_t> values_;
  std::vector<bool> given_;
};

struct Pipeline {
  std::string shader;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;     // the storage buffers a dispatch passes, in the shader's binding order
  uint32_t push_bytes = 0;
  // Built from the `_packed` variant: the recorder binds the arena at binding 0 and a table of
  // the `bindings` buffers' offsets (32-bit words from the arena's start) at binding 1.
  bool packed = false;
  bool push_descriptors = false;
  std::vector<uint32_t> spec;  // the specialization values it was built with (constant_id i = spec[i])
  bool statistics = false;     // created with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
  // A kernel that numbers its threads by subgroup lanes: created with full subgroups of this
  // required size (gpu::subgroup_layout_size); 0 for every other kernel.
  uint32_t subgroup_size = 0;
};

// A built pipeline and the push-constant struct its dispatches pass: PipelineCache::get<Push>
// returns one, and Recorder::dispatch takes a `Push` of exactly that type, so a kernel is never
// handed another kernel's push constants.
template <class Push>
struct Kernel {
  const Pipeline* pipeline = nullptr;
  const Pipeline& operator*() const { return *pipeline; }
  const Pipeline* operator->() const { return pipeline; }
};

class PipelineCache {
 public:
  explicit PipelineCache(Context& ctx);
  ~PipelineCache();
  // The pipeline for this shader and specialization; built on first use. `Push` is the struct the
  // caller passes to Recorder::dispatch (a shared layout from shaders/common/*.h where there is one).
  template <class Push>
  Result<Kernel<Push>> get(const char* shader, const SpecConstants& spec = {}) {
    static_assert(std::is_trivially_copyable_v<Push>, "push constants are copied as bytes");
    auto p = get_sized(shader, (uint32_t)sizeof(Push), spec);
    if (!p) return p.status();
    return Kernel<Push>{*p};
  }
  // For a shader without push constants.
  Result<const Pipeline*> get(const char* shader, const SpecConstants& spec = {}) { return get_sized(shader, 0, spec); }
  size_t size() const;

 private:
  struct Module {
    VkShaderModule module = VK_NULL_HANDLE;
    ShaderInterface interface;
  };
  Result<const Pipeline*> get_sized(const char* shader, uint32_t push_bytes, const SpecConstants& spec);
  Result<Module> load_module(const char* shader);  // the caller holds mutex_

  Context& ctx_;
  VkPipelineCache vk_cache_ = VK_NULL_HANDLE;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::map<std::string, Module> modules_;
  mutable std::mutex mutex_;
};

}  // namespace rfa::gpu
