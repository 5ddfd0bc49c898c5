// rfa-bench model: load time, memory, prefill and decode throughput of a whole model.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "bench.hpp"
#include "process_stats.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "rfa/context.hpp"
#include "rfa/session.hpp"
#include "core/access.hpp"

namespace rfa::bench {

namespace {
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(std::atoi(item.c_str()));
  return v;
}
}  // namespace

int bench_model(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json");
  const std::string dir = option(args, "--model", "");
  const int prefill_n = std::atoi(option(args, "--prefill", "512").c_str());
  const std::vector<int> decode_at = parse_list(option(args, "--decode", "512"));
  const int steps = std::max(1, std::atoi(option(args, "--steps", "8").c_str()));
  if (dir.empty()) {
    std::fprintf(stderr, "rfa-bench model: --model DIR is required\n");
    return 2;
  }
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;
  double t0 = now_ms();
  auto model = load_model_dir(dir);
  if (!model) {
    std::fprintf(stderr, "rfa-bench: %s\n", model.status().to_string().c_str());
    return 3;
  }
  const double load_ms = now_ms() - t0;
  const double rss_after_load = peak_rss_mib();
  ModelInfo info = model_info(**model);
  std::mt19937 rng(1);
  auto input = [&](int n, std::vector<int64_t>* ids, std::vector<float>* vals) {
    if (info.architecture == "lm") {
      std::uniform_int_distribution<int> u(0, info.vocab - 1);
      ids->resize((size_t)n);
      for (auto& x : *ids) x = u(rng);
    } else {
      std::normal_distribution<float> g(0.f, 1.f);
      vals->resize((size_t)n * info.input_dim);
      for (auto& x : *vals) x = g(rng);
    }
  };
  auto feed = [&](Session& s, int n) -> Status {
    std::vector<int64_t> ids;
    std::vector<float> vals;
    input(n, &ids, &vals);
    return info.architecture == "lm" ? s.prefill_tokens(ids, n) : s.prefill_values(vals, n);
  };
  gpu::Allocator& al = gpu_of(*ctx).allocator();
  const std::string device = ctx->device_info().name;
  int max_ctx = prefill_n;
  for (int c : decode_at) max_ctx = std::max(max_ctx, c + steps);
  SessionOptions so;
  so.max_context = max_ctx;
  so.last_output_only = true;
  so.profile = has_flag(args, "--profile");
  al.reset_peak();
  auto s = Session::create(*ctx, *model, so);
  if (!s) {
    std::fprintf(stderr, "rfa-bench: %s\n", s.status().to_string().c_str());
    return 5;
  }
  const uint64_t session_bytes = al.used_bytes();
  // Prefill throughput (the first call also builds the pipelines: warm up on a short prefix).
  Status st = feed(**s, std::min(prefill_n, 8));
  (*s)->reset();
  double p0 = now_ms();
  if (st.ok()) st = feed(**s, prefill_n);
  const double prefill_ms = now_ms() - p0, prefill_gpu = (*s)->last_gpu_ms();
  if (!st.ok()) {
    std::fprintf(stderr, "rfa-bench: %s\n", st.to_string().c_str());
    return 5;
  }
  if (!json) {
    std::printf("model %s (%s): %d layers, %d heads x %d, d_e %d, vocab %d on %s\n", info.name.c_str(),
                info.architecture.c_str(), info.layers, info.heads, info.head_dim, info.d_e, info.vocab, device.c_str());
    std::printf("load: %.1f ms, host peak RSS after load %.1f MiB; session (weights + caches for %d positions): %.1f MiB\n",
                load_ms, rss_after_load, max_ctx, session_bytes / 1048576.0);
    std::printf("prefill %d positions: %.1f ms wall (%.1f ms GPU) = %.1f positions/s\n", prefill_n, prefill_ms,
                prefill_gpu, prefill_n / (prefill_ms / 1000.0));
    if (has_flag(args, "--profile")) {
      std::printf("  GPU ms per kernel:");
      for (auto& [k, v] : (*s)->last_kernel_ms()) std::printf(" %s %.2f", k.c_str(), v);
      std::printf("\n");
    }
  } else {
    std::printf("{\"bench\":\"model\",\"model\":\"%s\",\"device\":\"%s\",\"load_ms\":%.3f,\"rss_mib\":%.1f,"
                "\"session_bytes\":%llu,\"prefill_n\":%d,\"prefill_ms\":%.3f,\"prefill_tok_s\":%.2f}\n",
                info.name.c_str(), device.c_str(), load_ms, rss_after_load, (unsigned long long)session_bytes, prefill_n,
                prefill_ms, prefill_n / (prefill_ms / 1000.0));
  }
  for (int c : decode_at) {
    (*s)->reset();
    if (c > 1 && !(st = feed(**s, c - 1)).ok()) {
      std::fprintf(stderr, "rfa-bench: %s\n", st.to_string().c_str());
      return 5;
    }
    std::vector<double> ms;
    for (int i = 0; i < steps && (*s)->position() < max_ctx; ++i) {
      double d0 = now_ms();
      if (!(st = feed(**s, 1)).ok()) {
        std::fprintf(stderr, "rfa-bench: %s\n", st.to_string().c_str());
        return 5;
      }
      ms.push_back(now_ms() - d0);
    }
    double med = median(ms);
    if (!json && has_flag(args, "--profile")) {
      std::printf("  last step, GPU ms per kernel:");
      for (auto& [k, v] : (*s)->last_kernel_ms()) std::printf(" %s %.2f", k.c_str(), v);
      std::printf("\n");
    }
    if (json)
      std::printf("{\"bench\":\"model\",\"decode_context\":%d,\"step_ms\":%.3f,\"decode_tok_s\":%.2f,\"device\":\"%s\"}\n", c, med,
                  1000.0 / med, device.c_str());
    else
      std::printf("decode at context %d: %.2f ms per step (median of %zu) = %.1f tokens/s\n", c, med, ms.size(), 1000.0 / med);
  }
  if (!json) std::printf("device peak during the run: %.1f MiB\n", al.peak_bytes() / 1048576.0);
  return 0;
}

}  // namespace rfa::bench
