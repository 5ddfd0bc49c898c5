// rfa-bench stream: what one streamed position costs — wall time, GPU time, the host's share
// (wall - GPU), submissions and bytes moved per step — and a soak mode that streams a long signal
// through a sliding window and checks that memory stays flat and the output stays exact.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <ctime>

#include "bench.hpp"
#include "process_stats.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "rfa/context.hpp"
#include "rfa/session.hpp"
#include "rfa/spiral.hpp"
#include "core/access.hpp"

namespace rfa::bench {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// thread_cpu_ms() (process_stats.hpp) is the host's own work per step, whatever the machine's load
// (the driver's queue threads, lavapipe's workers included, are not counted); rss_mib() the
// resident set now, not the peak.

// Inputs for position p of every batch row: token ids for language models, a measurement of a
// simulated spiral (or Gaussian noise for other widths) for signal and attention models.
struct Feeder {
  ModelInfo info;
  int batch = 1;
  std::mt19937 rng{1};
  std::vector<SpiralSimulator> spirals;
  explicit Feeder(const ModelInfo& i, int b) : info(i), batch(b) {
    for (int r = 0; r < b; ++r) {
      SpiralSimulator::Options o;
      o.seed = 1000 + (uint64_t)r;
      spirals.emplace_back(o);
    }
  }
  void next(std::vector<int64_t>* ids, std::vector<float>* vals, std::vector<double>* ts) {
    ids->clear();
    vals->clear();
    ts->clear();
    for (int b = 0; b < batch; ++b) {
      if (info.architecture == "lm") {
        ids->push_back(std::uniform_int_distribution<int>(0, info.vocab - 1)(rng));
      } else if (info.input_dim == 2) {
        const SpiralSimulator::Measurement s = spirals[(size_t)b].next();
        vals->push_back((float)s.y[0]);
        vals->push_back((float)s.y[1]);
        ts->push_back(s.t);
      } else {
        std::normal_distribution<float> g(0.f, 1.f);
        for (int d = 0; d < info.input_dim; ++d) vals->push_back(g(rng));
      }
    }
  }
  Status feed(Session& s, std::vector<int64_t>& ids, std::vector<float>& vals, std::vector<double>& ts) {
    return info.architecture == "lm" ? s.step_tokens(ids, ts) : s.step_values(vals, ts);
  }
};

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
  gpu::Allocator& al = gpu_of(*ctx).allocator();
  SessionOptions so;
  so.batch = batch;
  so.window = window;
  so.max_context = context + steps + 1;
  so.last_output_only = true;
  auto s = Session::create(*ctx, *model, so);
  if (!s) return fail(s.status());
  Session& S = **s;
  Feeder feeder(info, batch);
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;

  if (!soak) {
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
    return 0;
  }

  // Soak: `steps` positions through the window; memory at start and end; then the last outputs
  // against a fresh session that prefills only the positions they can see.
  if (window == 0) {
    std::fprintf(stderr, "rfa-bench stream --soak needs --window W > 0\n");
    return 2;
  }
  const int L = info.layers, tail = 64;
  // With a band of W keys per layer, an output sees at most L (W - 1) positions back.
  const int reach = L * (window - 1) + tail;
  std::vector<float> hist_vals;
  std::vector<int64_t> hist_ids;
  std::vector<double> hist_ts;
  std::vector<float> tail_out;
  double rss0 = 0, dev0 = 0;
  const double t0 = now_ms();
  for (int i = 0; i < steps; ++i) {
    feeder.next(&ids, &vals, &ts);
    if (Status st = feeder.feed(S, ids, vals, ts); !st.ok()) return fail(st);
    if (i == 1000) {  // after the ring filled once and the plans exist
      rss0 = rss_mib();
      dev0 = al.used_bytes() / 1048576.0;
    }
    if (i >= steps - reach) {  // batch row 0 only
      hist_ids.insert(hist_ids.end(), ids.begin(), ids.begin() + (ids.empty() ? 0 : 1));
      hist_vals.insert(hist_vals.end(), vals.begin(), vals.begin() + (vals.empty() ? 0 : info.input_dim));
      if (!ts.empty()) hist_ts.push_back(ts[0]);
      if (i >= steps - tail) tail_out.insert(tail_out.end(), S.outputs().begin(), S.outputs().begin() + info.output_dim);
    }
    if (!json && (i + 1) % 100000 == 0)
      std::printf("  %d steps, %.1f s, RSS %.1f MiB, device %.1f MiB\n", i + 1, (now_ms() - t0) / 1000.0, rss_mib(),
                  al.used_bytes() / 1048576.0);
  }
  const double total_s = (now_ms() - t0) / 1000.0;
  const double rss1 = rss_mib(), dev1 = al.used_bytes() / 1048576.0;
  // The reference: a fresh windowed session (batch 1) fed only the last `reach` positions with
  // their original timestamps; its last `tail` outputs must equal the stream's.
  SessionOptions fo = so;
  fo.batch = 1;
  auto fresh = Session::create(*ctx, *model, fo);
  if (!fresh) return fail(fresh.status());
  const int n = (int)(hist_ts.empty() ? std::max(hist_ids.size(), hist_vals.size() / std::max(1, info.input_dim)) : hist_ts.size());
  Status st = info.architecture == "lm" ? (*fresh)->prefill_tokens(hist_ids, n, hist_ts)
                                        : (*fresh)->prefill_values(hist_vals, n, hist_ts);
  if (!st.ok()) return fail(st);
  // last_output_only: the fresh session holds only its last output; re-run the tail one by one.
  double worst = 0, scale = 0;
  {
    (*fresh)->reset();
    const int head = n - tail, d = info.input_dim;
    std::vector<int64_t> hi(hist_ids.begin(), hist_ids.begin() + (hist_ids.empty() ? 0 : head));
    std::vector<float> hv(hist_vals.begin(), hist_vals.begin() + (hist_vals.empty() ? 0 : (size_t)head * d));
    std::vector<double> ht(hist_ts.begin(), hist_ts.begin() + (hist_ts.empty() ? 0 : head));
    st = info.architecture == "lm" ? (*fresh)->prefill_tokens(hi, head, ht) : (*fresh)->prefill_values(hv, head, ht);
    if (!st.ok()) return fail(st);
    for (int i = 0; i < tail; ++i) {
      std::vector<int64_t> one_id;
      std::vector<float> one_val;
      std::vector<double> one_t;
      if (!hist_ids.empty()) one_id.push_back(hist_ids[(size_t)head + i]);
      if (!hist_vals.empty())
        one_val.assign(hist_vals.begin() + (size_t)(head + i) * d, hist_vals.begin() + (size_t)(head + i + 1) * d);
      if (!hist_ts.empty()) one_t.push_back(hist_ts[(size_t)head + i]);
      st = info.architecture == "lm" ? (*fresh)->step_tokens(one_id, one_t) : (*fresh)->step_values(one_val, one_t);
      if (!st.ok()) return fail(st);
      for (int k = 0; k < info.output_dim; ++k) {
        const double a = tail_out[(size_t)i * info.output_dim + k], b = (*fresh)->outputs()[(size_t)k];
        worst = std::max(worst, std::fabs(a - b));
        scale = std::max(scale, std::fabs(b));
      }
    }
  }
  if (json)
    std::printf("{\"bench\":\"stream\",\"mode\":\"soak\",\"model\":\"%s\",\"batch\":%d,\"window\":%d,\"steps\":%d,"
                "\"seconds\":%.1f,\"wall_ms\":%.4f,\"rss_mib_start\":%.1f,\"rss_mib_end\":%.1f,\"device_mib_start\":%.1f,"
                "\"device_mib_end\":%.1f,\"max_abs_diff\":%.3g,\"output_scale\":%.3g,\"device\":\"%s\"}\n",
                info.name.c_str(), batch, window, steps, total_s, total_s * 1000.0 / steps, rss0, rss1, dev0, dev1, worst,
                scale, device.c_str());
  else
    std::printf("soak: %d steps of %s through a %d window in %.1f s (%.3f ms per step) on %s\n"
                "  host RSS %.1f -> %.1f MiB, device memory %.1f -> %.1f MiB\n"
                "  last %d outputs vs a fresh session fed only the last %d positions: max |diff| %.3g (outputs up to %.3g)\n",
                steps, info.name.c_str(), window, total_s, total_s * 1000.0 / steps, device.c_str(), rss0, rss1, dev0, dev1,
                tail, n, worst, scale);
  return 0;
}

}  // namespace rfa::bench
