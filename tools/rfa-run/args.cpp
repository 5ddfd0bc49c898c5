// rfa-run's flags: the usage text (--help) and the parser. Errors are one line each (the flag and
// what it expects), then a hint to --help; the whole usage is printed only when asked for.
#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace rfa::cli {

namespace {

const char* kUsage =
    "usage: rfa-run [--model DIR] [--device SEL] [input] [options]\n"
    "  --list-devices            list Vulkan devices and exit\n"
    "  --version                 print the version and exit\n"
    "  --self-check              check a Linear op and every attention path the kernel chooser can take on\n"
    "                            the device against the CPU (one line each: kernel, worst error, time) and exit\n"
    "  --verify-kernels          check the attention paths when the device is opened and never choose a failed\n"
    "                            one (ContextOptions::verify_kernels; default: RFA_VERIFY_KERNELS)\n"
    "  --kernel-cache FILE       keep --verify-kernels' verdicts in FILE per device and driver (RFA_KERNEL_CACHE)\n"
    "  --model DIR               model folder (config.json + model.safetensors); default: the bundled spiral-filter\n"
    "  --device SEL              device index or name substring (default: RFA_DEVICE, else the best device)\n"
    "  --device-profile NAME     keep to the limits of a device profile on top of the real device's\n"
    "                            (default: RFA_DEVICE_PROFILE); 'list' names them (docs/device-profiles.md)\n"
    "  --summary                 print the per-layer, per-head physical parameters and regimes\n"
    "input (one of; with none, the default model runs its streaming demo):\n"
    "  --prompt TEXT             text for language models\n"
    "  --tokens FILE.npy         int32/int64 token ids, [N] or [B,N]\n"
    "  --signal FILE.npy         float32/float64 values, [N,d] or [B,N,d] (signal and attention models)\n"
    "  --timestamps FILE.npy     [N] or [B,N] non-decreasing timestamps (default 0..N-1)\n"
    "options:\n"
    "  --stream                  feed the input one position at a time through the KV cache\n"
    "  --window N|none           sliding-window KV cache: each position sees its last N (a stream runs on\n"
    "                            past --max-context in constant memory; causal models). 0 (the default):\n"
    "                            the window the model was trained with (args.attention_window), else none;\n"
    "                            none: no window, even for a model trained with one\n"
    "  --kv f32|f16              precision of the K/V caches (f16: half the memory; see docs/math.md §9)\n"
    "  --generate N              generate N tokens after the prompt (language models)\n"
    "  --temperature T --top-k K --top-p P --seed S   sampling (temperature 0 = greedy, the default)\n"
    "  --max-context N           positions reserved per batch row (default: input + generated)\n"
    "  --dump DIR                write output.npy (float32 logits [B,N,V], predictions [B,N,d_in] or outputs [B,N,d_e])\n"
    "  --dump-attention SPEC     with --dump: all | L:H[,L:H...] -> attn_L{l}_H{h}.npy (Ahat) and\n"
    "                            attn_decayed_L{l}_H{h}.npy (A), float32 [B,N,N] (0 outside a window's band)\n"
    "  --dump-diagnostics DIR    attention tomography of every layer and head -> diagnostics_L{l}_H{h}.json\n"
    "  --diagnostics-window N    with --dump-diagnostics: the last N rows x the last N keys (default 512, <= 1024);\n"
    "                            with a sliding window, the last rows whose keys are all cached x the keys they see\n"
    "  --diagnostics-alphas LIST with --dump-diagnostics: temperatures, the first the main one (default 1)\n"
    "  --cpu-reference           compute through the double-precision CPU twin instead of the GPU\n"
    "  --json                    machine-readable summary on stdout\n"
    "exit codes: 0 ok, 2 usage, 3 model file or config, 4 input, 5 device or runtime\n";

bool parse_double(const std::string& s, double* out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "rfa-run: %s (see rfa-run --help)\n", msg.c_str());
  return kUsageExit;
}

bool parse_int(const std::string& s, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || end == s.c_str() || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int parse(int argc, char** argv, Args& a) {
  const std::map<std::string, std::string*> str = {{"--model", &a.model},       {"--device", &a.device},
                                                   {"--device-profile", &a.device_profile},
                                                   {"--prompt", &a.prompt},     {"--tokens", &a.tokens},
                                                   {"--signal", &a.signal},     {"--timestamps", &a.timestamps},
                                                   {"--dump", &a.dump},         {"--dump-attention", &a.dump_attention},
                                                   {"--dump-diagnostics", &a.diagnostics.dir},
                                                   {"--kernel-cache", &a.kernel_cache}};
  const std::map<std::string, bool*> flags = {{"--list-devices", &a.list_devices}, {"--version", &a.version},
                                              {"--self-check", &a.self_check},     {"--json", &a.json},
                                              {"--stream", &a.stream},             {"--cpu-reference", &a.cpu},
                                              {"--summary", &a.summary},           {"--verify-kernels", &a.verify_kernels}};
  const std::set<std::string> numbers = {"--generate", "--kv",    "--window", "--max-context", "--diagnostics-window",
                                         "--diagnostics-alphas", "--top-k", "--seed", "--temperature", "--top-p"};
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (auto f = flags.find(k); f != flags.end()) {
      *f->second = true;
      continue;
    }
    if (!str.count(k) && !numbers.count(k)) return usage_error("unknown option '" + k + "'");
    if (i + 1 >= argc) return usage_error("option " + k + " needs a value");
    std::string v = argv[++i];
    if (!seen.insert(k).second) return usage_error("option " + k + " given twice");
    long long n = 0;
    double d = 0;
    if (auto s = str.find(k); s != str.end()) {
      *s->second = v;
    } else if (k == "--generate") {
      if (!parse_int(v, 0, 1 << 24, &n)) return usage_error("--generate expects a count >= 0, got '" + v + "'");
      a.generate = (int)n;
    } else if (k == "--kv") {
      if (v != "f32" && v != "f16") return usage_error("--kv expects f32 or f16, got '" + v + "'");
      a.kv = v == "f16" ? KvPrecision::f16 : KvPrecision::f32;
    } else if (k == "--window") {
      if (v == "none") {
        a.window = -1;
      } else if (parse_int(v, 0, 1 << 26, &n)) {
        a.window = (int)n;
      } else {
        return usage_error("--window expects a count >= 0 (0: the model's own window) or 'none', got '" + v + "'");
      }
    } else if (k == "--max-context") {
      if (!parse_int(v, 1, 1 << 26, &n)) return usage_error("--max-context expects a positive count, got '" + v + "'");
      a.max_context = (int)n;
    } else if (k == "--diagnostics-window") {
      if (!parse_int(v, 1, 1024, &n)) return usage_error("--diagnostics-window expects a count in [1, 1024], got '" + v + "'");
      a.diagnostics.window = (int)n;
    } else if (k == "--diagnostics-alphas") {
      if (!dump::parse_alphas(v, &a.diagnostics.alphas))
        return usage_error("--diagnostics-alphas expects up to 65 comma-separated numbers > 0, got '" + v + "'");
    } else if (k == "--top-k") {
      if (!parse_int(v, 0, 1 << 30, &n)) return usage_error("--top-k expects a count >= 0, got '" + v + "'");
      a.sampler.top_k = (int)n;
    } else if (k == "--seed") {
      if (!parse_int(v, 0, INT64_MAX, &n)) return usage_error("--seed expects an integer >= 0, got '" + v + "'");
      a.sampler.seed = (uint64_t)n;
    } else if (k == "--temperature") {
      if (!parse_double(v, &d) || d < 0) return usage_error("--temperature expects a number >= 0, got '" + v + "'");
      a.sampler.temperature = d;
    } else if (k == "--top-p") {
      if (!parse_double(v, &d) || d <= 0 || d > 1) return usage_error("--top-p expects a number in (0, 1], got '" + v + "'");
      a.sampler.top_p = d;
    }
  }
  int inputs = !a.prompt.empty() + !a.tokens.empty() + !a.signal.empty();
  if (inputs > 1) return usage_error("give one input: --prompt, --tokens or --signal");
  if (!a.dump_attention.empty() && a.dump.empty()) return usage_error("--dump-attention needs --dump DIR");
  if ((seen.count("--diagnostics-window") || seen.count("--diagnostics-alphas")) && a.diagnostics.dir.empty())
    return usage_error("--diagnostics-window and --diagnostics-alphas need --dump-diagnostics DIR");
  if (!a.diagnostics.dir.empty() && a.cpu)
    return usage_error("--dump-diagnostics reads the GPU session's caches; it does not run with --cpu-reference");
  return kParsed;
}

}  // namespace rfa::cli
