// rfa-bench stream: what one streamed position costs — wall time, GPU time, the host's share
// (wall - GPU), submissions and bytes moved per step. `--soak` (bench_soak.cpp) streams a long
// signal through a sliding window and reports memory and output drift as it goes.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench.hpp"
#include "process_stats.hpp"
#include "rfa/context.hpp"
#include "rfa/session.hpp"
#include "stream_feeder.hpp"

namespace rfa::bench {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// thread_cpu_ms() (process_stats.hpp) is the host's own work per step, whatever the machine's load
// (the driver's queue threads, lavapipe's workers included, are not counted); rss_mib() the
// resident set now, not the peak.

int fail(const Status& s) {
  std::fprintf(stderr, "rfa-bench stream: %s\n", s.to_string().c_str());
  return 5;
}

}  // namespace

int bench_stream(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json"), soak = has_flag(args, "--soak");
  const std::string dir = option(args, "--model", std::string(RFA_SOURCE_DIR) + "/models/spiral-filter");
  const int batch = std::max(1, std::atoi(option(args, "--batch", "1").c_str()));
  const int context = std::max(1, std::atoi(option(args, "--context", soak ? "0" : "512").c_str()));
  const int steps = std::max(1, std::atoi(option(args, "--steps", soak ? "1000000" : "256").c_str()));
  // 0: the model's own window (args.attention_window; spiral-filter's is 50), else none. The
  // reports name the window the session ran with.
  const int window = std::max(0, std::atoi(option(args, "--window", soak ? "4096" : "0").c_str()));
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;
  auto model = load_model_dir(dir);
  if (!model) {
    std::fprintf(stderr, "rfa-bench stream: %s\n", model.status().to_string().c_str());
    return 3;
  }
  const ModelInfo info = model_info(**model);
  const std::string device = ctx->device_info().name;
  SessionOptions so;
  so.batch = batch;
  so.window = window;
  so.max_context = context + steps + 1;
  so.last_output_only = true;
  if (soak) return bench_soak(args, *ctx, *model, so);
  auto s = Session::create(*ctx, *model, so);
  if (!s) return fail(s.status());
  Session& S = **s;
  Feeder feeder(info, batch);
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;
  {
    // Fill the cache to `context - 1` positions one step at a time (the plan is recorded by the
    // first step), then time `steps` steps.
    for (int p = 0; p + 1 < context; ++p) {
      feeder.next(&ids, &vals, &ts);
      if (Status st = feeder.feed(S, ids, vals, ts); !st.ok()) return fail(st);
    }
    const SessionStats before = S.stats();
    std::vector<double> wall, gpu, cpu;
    for (int i = 0; i < steps; ++i) {
      feeder.next(&ids, &vals, &ts);
      const double t0 = now_ms(), c0 = thread_cpu_ms();
      if (Status st = feeder.feed(S, ids, vals, ts); !st.ok()) return fail(st);
      cpu.push_back(thread_cpu_ms() - c0);
      wall.push_back(now_ms() - t0);
      gpu.push_back(S.last_gpu_ms());
    }
    const SessionStats after = S.stats();
    const double w = median(wall), g = median(gpu), c = median(cpu);
    const double submits = (double)(after.submits - before.submits) / steps;
    const double up = (double)(after.bytes_up - before.bytes_up) / steps, down = (double)(after.bytes_down - before.bytes_down) / steps;
    if (json)
      std::printf("{\"bench\":\"stream\",\"model\":\"%s\",\"batch\":%d,\"context\":%d,\"window\":%d,\"steps\":%d,"
                  "\"wall_ms\":%.4f,\"gpu_ms\":%.4f,\"host_ms\":%.4f,\"host_cpu_ms\":%.4f,\"submits\":%.2f,"
                  "\"bytes_up\":%.0f,\"bytes_down\":%.0f,\"tok_s\":%.1f,\"device\":\"%s\"}\n",
                  info.name.c_str(), batch, context, S.window(), steps, w, g, w - g, c, submits, up, down, 1000.0 / w,
                  device.c_str());
    else
      std::printf("%s (%s) batch %d, context %d%s, %d steps on %s: wall %.3f ms, GPU %.3f ms, host %.3f ms "
                  "(wall - GPU; the calling thread's CPU %.3f ms) per step (medians); %.2f submissions, %.0f bytes up, "
                  "%.0f bytes down per step; %.1f steps/s\n",
                  info.name.c_str(), info.architecture.c_str(), batch, context,
                  S.window() ? (", window " + std::to_string(S.window())).c_str() : "", steps, device.c_str(), w, g, w - g, c,
                  submits, up, down, 1000.0 / w);
  }
  return 0;
}

}  // namespace rfa::bench
