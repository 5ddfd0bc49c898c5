// Sharing a Vulkan device with the runtime, and checking one.
//
// An app that draws (the viewer) or already owns a device creates it itself and hands it to the
// runtime with Context::adopt. These helpers answer the questions it has on the way: is the
// validation layer installed, does a device offer an extension, which device would the runtime
// pick, and which optional device extensions the runtime uses when the app enables them.
#pragma once

#include "rfa/export.h"

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "rfa/context.hpp"
#include "rfa/status.hpp"

namespace rfa {

// Instance-level queries (no instance needed).
RFA_API bool instance_has_layer(const char* name);
RFA_API bool instance_has_extension(const char* name);
// Whether `phys` offers the device extension `name`.
RFA_API bool device_has_extension(VkPhysicalDevice phys, const char* name);
// The runtime's preference among device types: discrete 4 > integrated 3 > virtual 2 > cpu 1 > other 0.
RFA_API int device_type_rank(VkPhysicalDeviceType type);

// Device extensions `phys` offers that the runtime uses when they are enabled: push descriptors
// (fewer descriptor allocations), and VK_KHR_portability_subset, which the Vulkan spec requires an
// app to enable wherever it is offered (MoltenVK). Enable these on the device you adopt and list
// them in AdoptedDevice::enabled_extensions.
RFA_API std::vector<const char*> wanted_device_extensions(VkPhysicalDevice phys);

// One path of the fused attention kernel that the chooser can take on the context's device, run on
// a small case against a double-precision CPU evaluation of the same fused math.
struct KernelCheck {
  std::string path;    // what was forced: "tile, fp16 caches", "decode, split-k", ...
  std::string kernel;  // the shader that ran, e.g. "rfa_attention_tile_sx_kv16"
  std::string why;     // the chooser's reason for that kernel
  double worst_error = 0;  // max |gpu - cpu| / (1 + |cpu|)
  double bound = 0;        // 2e-4 for fp32 products; 1.6e-2 for fp16 products and cooperative matrices
  double ms = 0;           // the case's GPU time (wall time where the device has no timestamps)
  bool pass = false;
};
// Every distinct path (keys from the cache or staged, the lag table or computed terms, the tile,
// fp16 products, cooperative matrices, decode merges, split-k, fp16 caches; the packed kernels
// where the device packs bindings).
RFA_API Result<std::vector<KernelCheck>> check_attention_kernels(Context& ctx);

// rfa-run --self-check: a Linear op of off-tile shape on the context's device, compared with a
// double-precision CPU loop, and every attention path (check_attention_kernels).
struct SelfCheck {
  int rows = 0, in = 0, out = 0;  // [rows x in] -> [rows x out]
  double max_abs_error = 0;
  std::vector<KernelCheck> attention;
  bool pass = false;              // max_abs_error < 1e-3 and every attention path within its bound
};
RFA_API Result<SelfCheck> self_check(Context& ctx);

}  // namespace rfa
