// The public rfa::Context: a thin face over gpu::Context.
#include <algorithm>
#include <sstream>

#include "core/kernel_verdicts.hpp"
#include "gpu/context.hpp"
#include "gpu/device_profiles.hpp"
#include "gpu/memory.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa/context.hpp"

namespace rfa {

namespace gpu {
Result<std::vector<DeviceInfo>> list_devices_impl();
}

const char* version() { return RFA_VERSION_STRING; }

Result<std::vector<DeviceInfo>> list_devices() { return gpu::list_devices_impl(); }

std::vector<DeviceProfileInfo> device_profiles() {
  std::vector<DeviceProfileInfo> out;
  for (const gpu::DeviceProfile& p : gpu::device_profiles()) out.push_back({p.name, p.description, p.source});
  return out;
}

Context::Context(std::unique_ptr<gpu::Context> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
  auto c = gpu::Context::create(options);
  if (!c) return c.status();
  if (options.verify_kernels) RFA_TRY(core::verify_kernels(**c, options.kernel_cache));
  return std::unique_ptr<Context>(new Context(c.take()));
}

Result<std::unique_ptr<Context>> Context::adopt(const AdoptedDevice& device, const ContextOptions& options) {
  auto c = gpu::Context::adopt(device, options);
  if (!c) return c.status();
  if (options.verify_kernels) RFA_TRY(core::verify_kernels(**c, options.kernel_cache));
  return std::unique_ptr<Context>(new Context(c.take()));
}

std::vector<std::string> Context::kernel_refusals() const { return impl_->caps().kernel_refusals; }

// A context runs on a queue family with compute.
DeviceInfo Context::device_info() const { return gpu::describe_device(impl_->caps(), impl_->device_index(), true); }

std::string Context::capabilities_summary() const {
  const gpu::Capabilities& c = impl_->caps();
  std::ostringstream o;
  o << "device: " << c.device_name << " (" << c.type_name() << "), Vulkan " << c.api_string() << "\n"
    << (c.profile.empty() ? std::string() : "device profile: " + c.profile + " (the limits below are the intersection)\n")
    << "driver: " << c.driver_name << (c.driver_info.empty() ? "" : " " + c.driver_info) << "\n"
    << "subgroup size: " << c.subgroup_size << (c.subgroup_arithmetic() ? " (arithmetic)" : "")
    << (c.min_subgroup_size ? ", " + std::to_string(c.min_subgroup_size) + " to " + std::to_string(c.max_subgroup_size)
                            : std::string())
    << (c.subgroup_size_control ? ", full subgroups of a required size" : ", no subgroup size control (no subgroup-lane kernels)")
    << "\n"
    << "shared memory: " << c.max_shared_memory << " bytes, workgroup invocations: " << c.max_workgroup_invocations << "\n"
    << "storage buffers: " << c.max_storage_buffers_per_stage << " per stage, " << c.max_storage_buffers_per_set
    << " per set, range " << c.max_storage_buffer_range << " bytes; push constants: " << c.max_push_constants
    << " bytes\n"
    << (c.packed_bindings ? "bindings: packed (kernels beyond " + std::to_string(c.max_storage_buffers_per_stage) +
                                " storage buffers read every tensor from one " +
                                std::to_string(c.packed_arena_bytes >> 20) + " MiB arena)\n"
                          : std::string())
    << "float64: " << (c.shader_float64 ? "yes" : "no") << ", int64: " << (c.shader_int64 ? "yes" : "no")
    << ", portability subset: " << (c.portability_subset ? "yes" : "no") << "\n"
    << "16-bit storage: " << (c.storage_16bit ? "yes" : "no") << ", float16: " << (c.shader_float16 ? "yes" : "no")
    << ", push descriptors: " << (c.push_descriptors ? "yes" : "no")
    << ", cooperative matrices (NV, 16x16x16 fp16): " << (c.coopmat_nv ? "yes" : "no")
    << ", (KHR, fp16): " << (c.coopmat_khr() ? std::to_string(c.coopmat_khr_block) + "x" + std::to_string(c.coopmat_khr_block) +
                                                  "x" + std::to_string(c.coopmat_khr_block)
                                            : std::string("no"))
    << ", per element (VK_NV_cooperative_matrix2): " << (c.coopmat_nv2 ? "yes" : "no")
    << ", Vulkan memory model: " << (c.vulkan_memory_model ? "yes" : "no") << ", SPIR-V up to "
    << ((c.spirv_version >> 16) & 0xff) << "." << ((c.spirv_version >> 8) & 0xff) << "\n"
    << "timestamps: " << (c.timestamps ? "yes" : "no") << " (period " << c.timestamp_period_ns << " ns)\n"
    << "device-local memory: " << (c.device_local_bytes >> 20) << " MiB" << (c.unified_memory ? " (unified)" : "") << "\n"
    << "memory budget: " << (impl_->allocator().budget() >> 20) << " MiB";
  for (const std::string& r : c.kernel_refusals) o << "\nkernel check: " << r;
  // The attention kernel's choices for three typical calls (B = 1, H = 8, D = 32): what runs and why.
  struct Shape {
    const char* name;
    uint32_t rows, capacity;
  } shapes[] = {{"prefill 4096", 4096, 4096}, {"decode at 4096", 1, 4096}, {"decode at 65536", 1, 65536}};
  for (const Shape& s : shapes) {
    const ops::AttentionTiling t = ops::choose_attention_tiling(c, impl_->kernels(), s.rows, 32, 8, s.capacity);
    o << "\nattention, " << s.name << ": " << t.why << " [BQ " << t.rows_per_group << ", S " << t.threads_per_row
      << ", BK " << t.keys_per_tile << ", splits " << t.splits << "]";
  }
  return o.str();
}

uint64_t Context::validation_message_count() const { return impl_->validation_message_count(); }
bool Context::lost() const { return impl_->lost(); }
std::mutex& Context::queue_mutex() { return impl_->queue_mutex(); }

}  // namespace rfa
