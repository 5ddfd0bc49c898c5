// rfa-bench: `rfa-bench linear` (Linear GFLOP/s vs a naive CPU loop), `rfa-bench attention`
// (fused RFA attention vs the runtime's own scaled-dot-product attention).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hpp"
#if __has_include("bench_attention.hpp")
#include "bench_attention.hpp"
#define RFA_HAVE_BENCH_ATTENTION 1
#endif
#include "bench_diagnostics.hpp"
#include "gpu/pipeline_stats.hpp"

namespace rfa::bench {

std::unique_ptr<Context> open_context(const std::vector<std::string>& args) {
  ContextOptions opts;
  opts.device = option(args, "--device", "");
  opts.device_profile = option(args, "--device-profile", "");  // docs/device-profiles.md
  // RFA_DEVICE, RFA_VALIDATION, RFA_DEVICE_PROFILE and the kernel variables, the flags first.
  opts = context_options_from_environment(opts);
  // `--stats`: pipelines built with the driver's statistics captured (rfa-bench attention --stats).
  opts.capture_pipeline_statistics = has_flag(args, "--stats");
  auto ctx = Context::create(opts);
  if (!ctx) {
    std::fprintf(stderr, "rfa-bench: %s\n", ctx.status().to_string().c_str());
    return nullptr;
  }
  return ctx.take();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string option(const std::vector<std::string>& args, const std::string& name, const std::string& fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  return fallback;
}

bool has_flag(const std::vector<std::string>& args, const std::string& name) {
  return std::find(args.begin(), args.end(), name) != args.end();
}

// `rfa-bench spirv FILE.spv`: the static counts of a SPIR-V module (gpu/pipeline_stats.hpp), e.g.
// of a kernel specialized and optimised by spirv-opt (tools/rfa-bench/kernel_counts.py).
int bench_spirv(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "rfa-bench spirv: a .spv file is needed\n");
    return 2;
  }
  FILE* f = std::fopen(args[0].c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "rfa-bench spirv: cannot read %s\n", args[0].c_str());
    return 2;
  }
  std::vector<uint32_t> words;
  uint32_t w = 0;
  while (std::fread(&w, 4, 1, f) == 1) words.push_back(w);
  std::fclose(f);
  auto c = gpu::count_spirv(words.data(), words.size());
  if (!c) {
    std::fprintf(stderr, "rfa-bench spirv: %s: %s\n", args[0].c_str(), c.status().to_string().c_str());
    return 2;
  }
  std::printf("{\"bench\":\"spirv\",\"file\":\"%s\",\"functions\":%u,\"instructions\":%u,\"inlined\":%u,"
              "\"loops\":%u,\"innermost_loop\":%u}\n",
              args[0].c_str(), c->functions, c->instructions, c->inlined, c->loops, c->innermost_loop);
  return 0;
}

}  // namespace rfa::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* usage =
      "usage: rfa-bench linear [--json] [--reps N] [--device SEL]\n"
      "       rfa-bench attention [--json] [--n 1024,4096] [--reps N] [--decode] [--kv f32|f16] [--stats] [--device SEL]\n"
      "       rfa-bench model --model DIR [--prefill 512] [--decode 512,4096] [--steps 8] [--profile] [--json]\n"
      "       rfa-bench stream [--model DIR] [--batch B] [--context N] [--steps K] [--window W] [--json]\n"
      "       rfa-bench stream --soak [--model DIR] [--window 4096] [--steps 1000000] [--every 100000] [--tail 64] [--json]\n"
      "       rfa-bench diagnostics --synthetic [--seed S] [--examples 256] [--alphas 0.1,...,10] [--json]\n"
      "       rfa-bench diagnostics [--model DIR] [--window 64,128,256,512] [--reps 5] [--json]\n"
      "       rfa-bench spirv FILE.spv   (static counts of a SPIR-V module; tools/rfa-bench/kernel_counts.py)\n"
      "every benchmark takes --device-profile NAME (default: RFA_DEVICE_PROFILE; docs/device-profiles.md)\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(usage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "linear") return rfa::bench::bench_linear(args);
  if (cmd == "model") return rfa::bench::bench_model(args);
  if (cmd == "stream") return rfa::bench::bench_stream(args);
  if (cmd == "diagnostics") return rfa::bench::bench_diagnostics(args);
  if (cmd == "spirv") return rfa::bench::bench_spirv(args);
#ifdef RFA_HAVE_BENCH_ATTENTION
  if (cmd == "attention") return rfa::bench::bench_attention(args);
#endif
  std::fprintf(stderr, "rfa-bench: unknown benchmark '%s'\n%s", cmd.c_str(), usage);
  return 2;
}
