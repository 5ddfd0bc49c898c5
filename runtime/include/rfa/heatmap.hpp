// Attention maps as GPU images: a probe of the visible rectangle of one head's Ahat or A, then a
// colour-map kernel into an RGBA8 image that a renderer samples. Nothing is read back to the host.
// Session::render_attention fills a Heatmap; the image ends in SHADER_READ_ONLY_OPTIMAL.
#pragma once

#include "rfa/export.h"

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>

#include "rfa/context.hpp"
#include "rfa/status.hpp"

namespace rfa {

// What to draw. The view [r0, r1) x [c0, c1) (absolute positions, rows = queries i, columns =
// keys j) is stretched over the whole image; it may reach beyond the positions computed so far:
// those cells get `kHeatmapPending`, masked (j > i) cells `kHeatmapMasked`. Only the part of the
// view that is already computed is probed. When the view has more cells than the image has pixels,
// a pixel shows the largest weight of the cells it covers.
struct HeatmapRequest {
  int layer = 0, head = 0, b = 0;
  int r0 = 0, r1 = 1, c0 = 0, c1 = 1;
  bool decayed = false;    // false: Ahat (rows sum to 1); true: A = Ahat E
  bool log_scale = false;  // false: t = v / vmax; true: t = 1 + log10(v / vmax) / decades
  float vmax = 1.0f;       // the weight at the top of the colour scale
  float decades = 4.0f;    // log scale: the range [vmax 10^-decades, vmax]
  // AFA layers: which weights (rfa/params.hpp kAllChannels, kReweighting or a channel c;
  // docs/variant-afa-full.md §5). Other mechanisms: kAllChannels only.
  int channel = -1;
};

// Colours (RGBA8 packed as R | G << 8 | B << 16 | A << 24) of cells without a weight.
constexpr uint32_t kHeatmapMasked = 0xff202020u;   // causal mask (j > i)
constexpr uint32_t kHeatmapPending = 0xff4a3a30u;  // not computed yet (the stream has not got there)

// The colour of weight `v` under `req`'s scale, exactly as colormap.comp computes it (viridis,
// a degree-6 polynomial fit); tests compare rendered pixels against it.
RFA_API uint32_t heatmap_color(float v, const HeatmapRequest& req);
// viridis(t) for t in [0, 1] as RGBA8.
RFA_API uint32_t viridis_rgba(float t);

class RFA_API Heatmap {
 public:
  // A device-local R8G8B8A8_UNORM image (usage STORAGE | SAMPLED | TRANSFER_DST) of width x height
  // and its view, on ctx's device, cleared to kHeatmapPending and left in SHADER_READ_ONLY_OPTIMAL.
  static Result<std::unique_ptr<Heatmap>> create(Context& ctx, int width, int height);
  ~Heatmap();
  Heatmap(const Heatmap&) = delete;
  Heatmap& operator=(const Heatmap&) = delete;

  VkImage image() const;
  VkImageView view() const;
  VkImageLayout layout() const { return VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL; }
  VkFormat format() const { return VK_FORMAT_R8G8B8A8_UNORM; }
  int width() const;
  int height() const;
  // GPU time of the last render's probe and colour-map dispatches (0 when timestamps are off).
  double last_probe_ms() const;
  double last_colormap_ms() const;
  const HeatmapRequest& last_request() const;

 private:
  friend struct internal::Access;  // runtime/src/core/access.hpp
  struct Impl;
  RFA_HIDDEN explicit Heatmap(std::unique_ptr<Impl> impl);  // the library's own: not exported
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfa
