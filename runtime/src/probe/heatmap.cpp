// Heatmap images and their rendering: probe -> colormap.comp -> vkCmdCopyBufferToImage.
// The colour-map kernel writes packed RGBA8 into a storage buffer (the pipeline cache makes
// storage-buffer layouts only); one buffer-to-image copy then fills the sampled image. The host
// never sees the weights.
#include "rfa/heatmap.hpp"

#include <algorithm>
#include <cmath>

#include "gpu/context.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/vk_check.hpp"
#include "probe/heatmap_render.hpp"
#include "push_layouts.h"
#include "viridis_ramp.h"
#include "core/access.hpp"

namespace rfa {

struct RFA_HIDDEN Heatmap::Impl {
  gpu::Context* g = nullptr;
  int width = 0, height = 0;
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  gpu::Buffer pixels, ahat, a;
  std::unique_ptr<gpu::Recorder> rec;  // probe -> colour map -> image, one recording per render
  HeatmapRequest last;

  ~Impl() {
    if (!g) return;
    rec.reset();  // waits for a render still in flight, which writes the image
    VkDevice dev = g->device();
    if (view) vkDestroyImageView(dev, view, nullptr);
    if (image) vkDestroyImage(dev, image, nullptr);
    if (memory) vkFreeMemory(dev, memory, nullptr);
  }
};

namespace {

using shader::ColormapPush;

// Where the sampled image is read: the fragment shader when the shared queue can do graphics;
// otherwise (a compute-only queue) every later command.
VkPipelineStageFlags reader_stage(gpu::Context& g) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(g.physical_device(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> qf(n);
  vkGetPhysicalDeviceQueueFamilyProperties(g.physical_device(), &n, qf.data());
  bool graphics = g.queue_family() < n && (qf[g.queue_family()].queueFlags & VK_QUEUE_GRAPHICS_BIT);
  return graphics ? VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT : VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
}

Status ensure(gpu::Context& g, gpu::Buffer& b, uint64_t bytes, const char* what) {
  if (b.valid() && b.size >= bytes) return Status::Ok();
  b.release();
  auto r = g.allocator().allocate(std::max<uint64_t>(bytes, 4), gpu::MemoryKind::device, what);
  if (!r) return r.status();
  b = r.take();
  return Status::Ok();
}

}  // namespace

// The viridis colour scale (shaders/common/viridis_ramp.h), with colormap.comp's arithmetic.
uint32_t viridis_rgba(float t) {
  using shader::kViridisRamp;
  const float x = std::clamp(t, 0.0f, 1.0f) * 10.0f;
  const int i = std::min((int)x, 9);
  const float f = x - (float)i;
  uint32_t out = 0xff000000u;
  for (int ch = 0; ch < 3; ++ch) {
    float v = kViridisRamp[3 * i + ch] + f * (kViridisRamp[3 * (i + 1) + ch] - kViridisRamp[3 * i + ch]);
    v = std::clamp(v, 0.0f, 1.0f);
    out |= (uint32_t)(v * 255.0f + 0.5f) << (8 * ch);
  }
  return out;
}

uint32_t heatmap_color(float v, const HeatmapRequest& req) {
  float t;
  if (req.log_scale)
    t = v > 0 ? std::clamp(1.0f + std::log(v / req.vmax) / (std::log(10.0f) * req.decades), 0.0f, 1.0f) : 0.0f;
  else
    t = std::clamp(v / req.vmax, 0.0f, 1.0f);
  return viridis_rgba(t);
}

Heatmap::Heatmap(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Heatmap::~Heatmap() = default;
VkImage Heatmap::image() const { return impl_->image; }
VkImageView Heatmap::view() const { return impl_->view; }
int Heatmap::width() const { return impl_->width; }
int Heatmap::height() const { return impl_->height; }
double Heatmap::last_probe_ms() const {
  double ms = 0;
  if (impl_->rec && !impl_->rec->in_flight())
    for (const auto& t : impl_->rec->timings()) ms += t.label == "colormap" ? 0.0 : t.ms;
  return ms;
}
double Heatmap::last_colormap_ms() const {
  double ms = 0;
  if (impl_->rec && !impl_->rec->in_flight())
    for (const auto& t : impl_->rec->timings()) ms += t.label == "colormap" ? t.ms : 0.0;
  return ms;
}
const HeatmapRequest& Heatmap::last_request() const { return impl_->last; }

Result<std::unique_ptr<Heatmap>> Heatmap::create(Context& ctx, int width, int height) {
  if (width < 1 || height < 1 || width > 4096 || height > 4096)
    return Status(Code::invalid_argument, "Heatmap::create: size " + std::to_string(width) + " x " +
                                              std::to_string(height) + " outside 1..4096");
  gpu::Context& g = gpu_of(ctx);
  RFA_TRY(g.usable());
  auto impl = std::make_unique<Impl>();
  impl->g = &g;
  impl->width = width;
  impl->height = height;
  VkDevice dev = g.device();

  VkImageCreateInfo ii{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ii.imageType = VK_IMAGE_TYPE_2D;
  ii.format = VK_FORMAT_R8G8B8A8_UNORM;
  ii.extent = {(uint32_t)width, (uint32_t)height, 1};
  ii.mipLevels = 1;
  ii.arrayLayers = 1;
  ii.samples = VK_SAMPLE_COUNT_1_BIT;
  ii.tiling = VK_IMAGE_TILING_OPTIMAL;
  ii.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  ii.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VK_TRY(vkCreateImage(dev, &ii, nullptr, &impl->image));
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(dev, impl->image, &req);
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(g.physical_device(), &mp);
  int type = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount && type < 0; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
      type = (int)i;
  for (uint32_t i = 0; i < mp.memoryTypeCount && type < 0; ++i)
    if (req.memoryTypeBits & (1u << i)) type = (int)i;
  if (type < 0) return Status(Code::device_error, "Heatmap::create: no memory type for the heatmap image");
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = (uint32_t)type;
  VK_TRY(vkAllocateMemory(dev, &ai, nullptr, &impl->memory));
  VK_TRY(vkBindImageMemory(dev, impl->image, impl->memory, 0));
  VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vi.image = impl->image;
  vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vi.format = VK_FORMAT_R8G8B8A8_UNORM;
  vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  VK_TRY(vkCreateImageView(dev, &vi, nullptr, &impl->view));

  RFA_TRY(ensure(g, impl->pixels, (uint64_t)width * height * 4, "heatmap pixels"));
  impl->rec = std::make_unique<gpu::Recorder>(g, gpu::GpuTiming::per_dispatch);

  // Cleared to "pending" and ready for sampling before anything is rendered.
  const VkPipelineStageFlags reader = reader_stage(g);
  VkImage image = impl->image;
  RFA_TRY(g.submit_once([&](VkCommandBuffer cb) {
    gpu::image_layout_barrier(cb, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                              VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue c{};
    for (int ch = 0; ch < 4; ++ch) c.float32[ch] = (float)((kHeatmapPending >> (8 * ch)) & 0xff) / 255.0f;
    VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdClearColorImage(cb, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &c, 1, &range);
    gpu::image_layout_barrier(cb, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, reader,
                              VK_ACCESS_SHADER_READ_BIT);
  }));
  return std::unique_ptr<Heatmap>(new Heatmap(std::move(impl)));
}

namespace probe {

Result<gpu::Recorder*> record_heatmap(gpu::Context& g, Heatmap& map, const HeatmapRequest& req, bool causal, int pr0,
                                      int pr1, int pc0, int pc1, const RecordProbe& record_probe) {
  auto& M = internal::Access::heatmap(map);
  if (M.g != &g)
    return Status(Code::invalid_argument, "render_attention: the heatmap was created on another context");
  if (req.r1 <= req.r0 || req.c1 <= req.c0 || req.r0 < 0 || req.c0 < 0)
    return Status(Code::invalid_argument, "render_attention: empty or negative view rectangle");
  if (!(req.vmax > 0) || !(req.decades > 0))
    return Status(Code::invalid_argument, "render_attention: vmax and decades must be positive");
  const bool probed = pr1 > pr0 && pc1 > pc0;
  const uint64_t cells = probed ? (uint64_t)(pr1 - pr0) * (uint64_t)(pc1 - pc0) : 1;
  RFA_TRY(ensure(g, M.ahat, cells * 4, "heatmap probe Ahat"));
  RFA_TRY(ensure(g, M.a, cells * 4, "heatmap probe A"));
  auto pipe = g.pipelines().get<ColormapPush>("colormap");
  if (!pipe) return pipe.status();

  // One recording: probe -> colour map -> the image (moved to TRANSFER_DST and back around the
  // copy, so that every later submission on this queue samples the new pixels).
  gpu::Recorder& R = *M.rec;
  RFA_TRY(R.begin());
  Status st = probed ? record_probe(R, M.ahat, M.a) : Status::Ok();
  if (st.ok()) {
    ColormapPush push{(uint32_t)M.width, (uint32_t)M.height, (uint32_t)req.r0, (uint32_t)req.r1, (uint32_t)req.c0,
                      (uint32_t)req.c1, (uint32_t)(probed ? pr0 : 0), (uint32_t)(probed ? pr1 : 0),
                      (uint32_t)(probed ? pc0 : 0), (uint32_t)(probed ? pc1 : 0), causal ? 1u : 0u,
                      req.log_scale ? 1u : 0u, req.vmax, req.decades, kHeatmapMasked, kHeatmapPending};
    R.dispatch(*pipe, {gpu::in(req.decayed ? M.a : M.ahat), gpu::out(M.pixels)}, push, gpu::workgroups(M.width, 8),
               gpu::workgroups(M.height, 8), 1, "colormap");
    R.copy_to_image(M.pixels, M.image, (uint32_t)M.width, (uint32_t)M.height, reader_stage(g));
  }
  Status e = R.end();
  RFA_TRY(g.note(st));
  RFA_TRY(g.note(e));
  M.last = req;
  return &R;
}

}  // namespace probe
}  // namespace rfa
