// rfa-viewer: live views of what each RFA head does, for any model folder.
//   rfa-viewer --model DIR                          a window (GLFW + Dear ImGui + Vulkan)
//   rfa-viewer --headless --model DIR --frames K --screenshot out.png    off-screen, no window system
// One Vulkan device serves both: the viewer creates it and hands it to the runtime
// (rfa::Context::adopt); compute and drawing share one queue, so each runtime submission (fenced)
// precedes the frame that samples its images.
#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "app.hpp"
#include "default_model.hpp"
#include "image_quad.hpp"
#include "imgui.h"
#include "imgui_impl_glfw.h"
#include "imgui_impl_vulkan.h"
#include "screenshot.hpp"
#include "targets.hpp"
#include "vk_device.hpp"
#include "rfa/environment.hpp"

using namespace viewer;

namespace {

const char* kUsage =
    "usage: rfa-viewer [--model DIR] [--headless] [--frames K] [--screenshot out.png] [options]\n"
    "  --model DIR          model folder (config.json + model.safetensors); also a path field in the UI\n"
    "                       (default: RFA_MODEL, else the zoo's spiral-filter beside the program)\n"
    "  --npy FILE           signal input [N, d_in] (+ an optional timestamp column); default: live spiral\n"
    "  --prompt TEXT        lm prompt (then generation; --no-generate to stop after the prompt)\n"
    "  --steps N            positions streamed before the first frame\n"
    "  --rate R             positions streamed per frame while playing (default 1; 0 = paused)\n"
    "  --layer L --head H   the head on the map;   --decayed: A instead of Ahat;   --linear / --log\n"
    "  --vmax V --decades D colour scale (log: [V 10^-D, V])\n"
    "  --noise S --interval DT --irregular --seed N    the live spiral's measurement noise and sampling\n"
    "  --max-context N      KV cache positions (default 1024);  --view-extent N: map frame (default 64, grows)\n"
    "  --window N           sliding-window KV cache (each position sees its last N): stream without end\n"
    "  --headless           render off-screen without a window system\n"
    "  --frames K           exit after K frames (window: run until closed when not given)\n"
    "  --screenshot PNG     write the last frame;  --dump-json FILE: map placement and regimes table\n"
    "  --width W --height H frame size (default 1600 x 1000)\n"
    "  --print-timings      per frame: GPU ms of inference, probes and colour maps\n"
    "  --diagnostics-alpha A  the attention tomography panel's starting temperature (default 1)\n"
    "  --hover I,J          hold the mouse over map cell (I, J): its readout and highlighted tokens\n"
    "  --channel C          AFA layers: the map's view: C >= 0 that channel's weights, -1 their mean, -2 the\n"
    "                       reweighting map (docs/variant-afa-full.md, section 5)\n"
    "RFA_VALIDATION=1 turns the Khronos validation layer on; any warning or error makes the exit code 1.\n";

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rfa-viewer: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") o.model_dir = val();
    else if (a == "--npy") o.npy = val();
    else if (a == "--prompt") o.prompt = val();
    else if (a == "--steps") o.steps = std::atoi(val());
    else if (a == "--rate") o.steps_per_frame = std::atof(val());
    else if (a == "--layer") o.layer = std::atoi(val());
    else if (a == "--head") o.head = std::atoi(val());
    else if (a == "--decayed") o.decayed = true;
    else if (a == "--linear") o.log_scale = false;
    else if (a == "--log") o.log_scale = true;
    else if (a == "--vmax") o.vmax = std::atof(val());
    else if (a == "--decades") o.decades = std::atof(val());
    else if (a == "--noise") o.noise = std::atof(val());
    else if (a == "--interval") o.interval = std::atof(val());
    else if (a == "--irregular") o.irregular = true;
    else if (a == "--seed") o.seed = std::strtoull(val(), nullptr, 10);
    else if (a == "--max-context") o.max_context = std::atoi(val());
    else if (a == "--window") o.window = std::atoi(val());
    else if (a == "--view-extent") o.view_extent = std::atoi(val());
    else if (a == "--headless") o.headless = true;
    else if (a == "--frames") o.frames = std::atoi(val());
    else if (a == "--screenshot") o.screenshot = val();
    else if (a == "--dump-json") o.dump_json = val();
    else if (a == "--width") o.width = std::atoi(val());
    else if (a == "--height") o.height = std::atoi(val());
    else if (a == "--print-timings") o.print_timings = true;
    else if (a == "--no-generate") o.generate = false;
    else if (a == "--diagnostics-alpha") o.diagnostics_alpha = std::atof(val());
    else if (a == "--channel") o.channel = std::atoi(val());
    else if (a == "--hover") {
      if (std::sscanf(val(), "%d,%d", &o.hover_i, &o.hover_j) != 2 || o.hover_i < 0 || o.hover_j < 0) {
        std::fprintf(stderr, "rfa-viewer: --hover expects I,J (a map cell)\n");
        return false;
      }
    }
    else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else {
      std::fprintf(stderr, "rfa-viewer: unknown option %s\n%s", a.c_str(), kUsage);
      return false;
    }
  }
  if (o.model_dir.empty()) o.model_dir = default_model(argv[0]);
  if (o.headless && o.frames < 0) o.frames = 1;
  if (!(o.diagnostics_alpha > 0) || o.diagnostics_alpha > 100) {
    std::fprintf(stderr, "rfa-viewer: --diagnostics-alpha expects a number in (0, 100]\n");
    return false;
  }
  if (o.width < 64 || o.height < 64 || o.max_context < 1 || o.steps < 0 || o.window < 0) {
    std::fprintf(stderr, "rfa-viewer: bad sizes\n");
    return false;
  }
  return true;
}

bool glfw_present(VkInstance inst, VkPhysicalDevice phys, uint32_t family) {
  return glfwGetPhysicalDevicePresentationSupport(inst, phys, family) == GLFW_TRUE;
}

void check_vk(VkResult r) {
  if (r != VK_SUCCESS) std::fprintf(stderr, "rfa-viewer: ImGui Vulkan backend: VkResult %d\n", (int)r);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;

  GLFWwindow* window = nullptr;
  std::vector<const char*> inst_exts;
  if (!opt.headless) {
    if (!glfwInit()) {
      std::fprintf(stderr, "rfa-viewer: glfwInit failed (no display? use --headless, or xvfb-run -a)\n");
      return 5;
    }
    if (!glfwVulkanSupported()) {
      std::fprintf(stderr, "rfa-viewer: GLFW finds no Vulkan loader\n");
      return 5;
    }
    uint32_t n = 0;
    const char** e = glfwGetRequiredInstanceExtensions(&n);
    inst_exts.assign(e, e + n);
  }
  VkSetup vk;
  std::string err;
  if (!vk.create(inst_exts, -1, !opt.headless, opt.headless ? nullptr : glfw_present, &err)) {
    std::fprintf(stderr, "rfa-viewer: %s\n", err.c_str());
    return 5;
  }
  // The runtime shares the viewer's loader (the same libvulkan.so.1 / vulkan-1.dll).
  rfa::AdoptedDevice ad{vk.instance, vk.phys, vk.device, vk.queue, vk.family, vk.device_extensions, vkGetInstanceProcAddr};
  // RFA_DEVICE_PROFILE (docs/device-profiles.md) and the kernel variables; the device and its
  // validation are VkSetup's (RFA_DEVICE, RFA_VALIDATION above).
  rfa::ContextOptions co = rfa::context_options_from_environment();
  co.device.clear();
  co.validation = 0;  // the instance is ours; our messenger already counts every message
  auto ctx = rfa::Context::adopt(ad, co);
  if (!ctx) {
    std::fprintf(stderr, "rfa-viewer: %s\n", ctx.status().to_string().c_str());
    return 5;
  }
  std::mutex& qm = (*ctx)->queue_mutex();
  int rc = 0;
  {
    App app(**ctx, opt);
    if (!app.error().empty()) {
      std::fprintf(stderr, "rfa-viewer: %s\n", app.error().c_str());
      if (opt.headless) return 3;
    }
    for (int left = opt.steps; left > 0;) {  // before the first frame, synchronously
      const int done = app.step(left);
      if (done == 0) break;
      left -= done;
    }

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // the same layout every run (screenshots, tests)
    ImGui::StyleColorsDark();

    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 256};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    dpi.maxSets = 256;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    vkCreateDescriptorPool(vk.device, &dpi, nullptr, &pool);

    OffscreenTarget off;
    WindowTarget win;
    VkRenderPass pass = VK_NULL_HANDLE;
    uint32_t min_images = 2, images = 2;
    if (opt.headless) {
      if (!off.create(vk.phys, vk.device, vk.family, vk.queue, &qm, (uint32_t)opt.width, (uint32_t)opt.height)) {
        std::fprintf(stderr, "rfa-viewer: cannot create the off-screen target\n");
        return 5;
      }
      pass = off.render_pass();
      io.DisplaySize = {(float)opt.width, (float)opt.height};
    } else {
      glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
      window = glfwCreateWindow(opt.width, opt.height, "rfa-viewer", nullptr, nullptr);
      if (!window || !win.create(vk.instance, vk.phys, vk.device, vk.family, vk.queue, &qm, window)) {
        std::fprintf(stderr, "rfa-viewer: cannot create the window or its swapchain\n");
        return 5;
      }
      pass = win.render_pass();
      min_images = win.min_image_count();
      images = win.image_count();
      ImGui_ImplGlfw_InitForVulkan(window, true);
    }
    ImageQuads quads;
    if (!quads.init(vk.device, pass, pool)) {
      std::fprintf(stderr, "rfa-viewer: cannot create the image pipeline\n");
      return 5;
    }
    ImGui_ImplVulkan_InitInfo ii{};
    ii.Instance = vk.instance;
    ii.PhysicalDevice = vk.phys;
    ii.Device = vk.device;
    ii.QueueFamily = vk.family;
    ii.Queue = vk.queue;
    ii.DescriptorPool = pool;
    ii.MinImageCount = min_images;
    ii.ImageCount = images;
    ii.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
    ii.CheckVkResultFn = check_vk;
    ImGui_ImplVulkan_Init(&ii, pass);
    auto fonts = [](VkCommandBuffer cb) { ImGui_ImplVulkan_CreateFontsTexture(cb); };
    if (opt.headless) off.frame(fonts, nullptr);
    else win.submit_once(fonts);
    ImGui_ImplVulkan_DestroyFontUploadObjects();

    auto last = std::chrono::steady_clock::now();
    for (int frame = 0; opt.frames < 0 || frame < opt.frames; ++frame) {
      const auto t_frame = std::chrono::steady_clock::now();
      if (window) {
        glfwPollEvents();
        if (glfwWindowShouldClose(window)) break;
        ImGui_ImplGlfw_NewFrame();
      } else {
        auto now = std::chrono::steady_clock::now();
        io.DeltaTime = std::max(1e-4f, std::chrono::duration<float>(now - last).count());
        last = now;
      }
      ImGui_ImplVulkan_NewFrame();
      ImGui::NewFrame();
      app.update();
      app.draw(quads);
      ImGui::Render();
      ImDrawData* dd = ImGui::GetDrawData();
      const float fbw = dd->DisplaySize.x * dd->FramebufferScale.x, fbh = dd->DisplaySize.y * dd->FramebufferScale.y;
      auto record = [&](VkCommandBuffer cb) {
        quads.begin_render(cb, fbw, fbh);
        ImGui_ImplVulkan_RenderDrawData(dd, cb);
      };
      bool ok = opt.headless ? off.frame(nullptr, record) : win.frame(nullptr, record);
      quads.end_frame();
      if (!ok) {
        std::fprintf(stderr, "rfa-viewer: frame %d failed to submit or present\n", frame);
        rc = 5;
        break;
      }
      if (opt.print_timings) {
        const FrameTimes& t = app.frame_times();
        const double frame_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_frame).count();
        std::printf("frame %d position %d steps %d inference_gpu_ms %.3f inference_wall_ms %.3f probe_gpu_ms %.3f "
                    "colormap_gpu_ms %.3f maps %d maps_wall_ms %.3f frame_wall_ms %.3f\n",
                    frame, app.position(), t.steps, t.inference_gpu_ms, t.inference_wall_ms, t.probe_gpu_ms,
                    t.colormap_gpu_ms, t.maps, t.maps_wall_ms, frame_ms);
      }
    }
    vkDeviceWaitIdle(vk.device);
    if (!opt.screenshot.empty()) {
      std::vector<uint8_t> px;
      if (!opt.headless) {
        std::fprintf(stderr, "rfa-viewer: --screenshot needs --headless\n");
        rc = rc ? rc : 2;
      } else if (!off.read_pixels(px) || !write_png(opt.screenshot, opt.width, opt.height, px)) {
        std::fprintf(stderr, "rfa-viewer: cannot write %s\n", opt.screenshot.c_str());
        rc = rc ? rc : 7;
      }
    }
    if (!opt.dump_json.empty()) std::ofstream(opt.dump_json) << app.dump_json();

    ImGui_ImplVulkan_Shutdown();
    if (window) ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    quads.destroy();
    if (opt.headless) off.destroy();
    else win.destroy();
    vkDestroyDescriptorPool(vk.device, pool, nullptr);
  }  // the app (sessions, heatmaps) before the context
  ctx->reset();
  if (window) glfwDestroyWindow(window);
  vk.destroy();
  if (!opt.headless) glfwTerminate();
  if (vk.messages.load() > 0) {
    std::fprintf(stderr, "rfa-viewer: %llu validation message(s)\n", (unsigned long long)vk.messages.load());
    return 1;
  }
  return rc;
}
