// The public device helpers (rfa/device.hpp): thin faces over the gpu layer, plus the self-check,
// which checks the device against a few lines of its own (librfa carries no CPU twin).
#include <algorithm>
#include <cmath>
#include <random>

#include "gpu/capabilities.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "model/model.hpp"
#include "ops/attention_check.hpp"
#include "ops/linear.hpp"
#include "rfa/device.hpp"
#include "core/access.hpp"

namespace rfa {

bool instance_has_layer(const char* name) { return gpu::instance_has_layer(name); }
bool instance_has_extension(const char* name) { return gpu::instance_has_extension(name); }
bool device_has_extension(VkPhysicalDevice phys, const char* name) { return gpu::device_has_extension(phys, name); }
int device_type_rank(VkPhysicalDeviceType type) { return gpu::device_type_rank(type); }

std::vector<const char*> wanted_device_extensions(VkPhysicalDevice phys) {
  std::vector<const char*> out;
  for (const char* e : {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, "VK_KHR_portability_subset"})
    if (gpu::device_has_extension(phys, e)) out.push_back(e);
  return out;
}

Result<SelfCheck> self_check(Context& ctx) {
  gpu::Context& g = gpu_of(ctx);
  SelfCheck r;
  r.rows = 61, r.in = 100, r.out = 257;  // deliberately off-tile
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  LinearWeights w;
  w.in = r.in;
  w.out = r.out;
  w.weight.shape = {r.out, r.in};
  w.bias.shape = {r.out};
  for (int i = 0; i < r.in * r.out; ++i) w.weight.data.push_back(d(rng));
  for (int i = 0; i < r.out; ++i) w.bias.data.push_back(d(rng));
  std::vector<float> x((size_t)r.rows * r.in);
  for (float& v : x) v = d(rng);
  auto lw = ops::LinearGpu::create(g, w, "self-check");
  if (!lw) return lw.status();
  auto bx = g.allocator().allocate(x.size() * 4, gpu::MemoryKind::device, "self-check x");
  if (!bx) return bx.status();
  auto by = g.allocator().allocate((size_t)r.rows * r.out * 4, gpu::MemoryKind::device, "self-check y");
  if (!by) return by.status();
  RFA_TRY(g.upload(*bx, x.data(), x.size() * 4));
  gpu::Recorder rec(g);
  RFA_TRY(rec.begin());
  RFA_TRY(ops::record_linear(g, rec, *bx, *lw, *by, r.rows));
  RFA_TRY(rec.submit_and_wait());
  std::vector<float> y((size_t)r.rows * r.out);
  RFA_TRY(g.download(*by, y.data(), y.size() * 4));
  // y = x W^T + b in double on the CPU, row by row.
  for (int row = 0; row < r.rows; ++row)
    for (int o = 0; o < r.out; ++o) {
      double want = w.bias.data[(size_t)o];
      for (int i = 0; i < r.in; ++i)
        want += (double)w.weight.data[(size_t)o * r.in + i] * (double)x[(size_t)row * r.in + i];
      const double got = y[(size_t)row * r.out + o];
      r.max_abs_error = std::max(r.max_abs_error, std::isfinite(got) ? std::fabs(got - want) : INFINITY);
    }
  r.pass = r.max_abs_error < 1e-3;
  auto att = check_attention_kernels(ctx);
  if (!att) return att.status();
  r.attention = att.take();
  for (const KernelCheck& k : r.attention) r.pass = r.pass && k.pass;
  return r;
}

Result<std::vector<KernelCheck>> check_attention_kernels(Context& ctx) {
  auto r = ops::check_attention_paths(gpu_of(ctx));
  if (!r) return r.status();
  std::vector<KernelCheck> out;
  for (const ops::PathCheck& c : *r) out.push_back({c.path, c.kernel, c.why, c.worst_error, c.bound, c.ms, c.pass});
  return out;
}

}  // namespace rfa
