// rfa-run: run an RFA model on a Vulkan device (or its double-precision CPU twin).
// Exit codes: 0 ok, 2 usage, 3 model file or config error, 4 input error, 5 device or runtime error.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#include "demo.hpp"
#include "args.hpp"
#include "attention_dump.hpp"
#include "diagnostics_dump.hpp"
#include "progress.hpp"
#include "rfa/context.hpp"
#include "rfa/environment.hpp"
#include "rfa/npy.hpp"
#include "rfa/reference.hpp"
#include "rfa/session.hpp"
#include "rfa/tokenizer.hpp"
#include "sampler.hpp"

namespace fs = std::filesystem;
using namespace rfa;

namespace {

using cli::Args;
using cli::parse_int;
using cli::usage_error;

int exit_code(Code c) {
  switch (c) {
    case Code::ok: return 0;
    case Code::invalid_argument: return 2;
    case Code::model_error: return 3;
    case Code::input_error: return 4;
    case Code::io_error: return 4;
    default: return 5;
  }
}

int fail(const Status& s, int code = -1) {
  Progress::interrupt();
  std::fprintf(stderr, "rfa-run: %s\n", s.to_string().c_str());
  return code >= 0 ? code : exit_code(s.code());
}

// A probe the flags asked for that the session cannot answer (rows or keys no longer cached, a
// head kind without that probe): the input is at fault, not the command line, so never exit 2.
int probe_fail(const Status& s) { return fail(s, s.code() == Code::invalid_argument ? 4 : -1); }

// The folder of this program, whichever way it was started (the installed models lie beside it).
fs::path executable_dir() {
  std::error_code ec;
#if defined(_WIN32)
  std::wstring buf(32768, L'\0');
  const DWORD n = ::GetModuleFileNameW(nullptr, buf.data(), (DWORD)buf.size());
  buf.resize(n);
  fs::path self(buf);
#elif defined(__APPLE__)
  uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::string buf(size, '\0');
  _NSGetExecutablePath(buf.data(), &size);
  fs::path self = fs::canonical(buf.c_str(), ec);
#else
  fs::path self = fs::canonical("/proc/self/exe", ec);
#endif
  return self.parent_path();
}

std::string default_model() {
  if (std::string e = environment_variable("RFA_MODEL"); !e.empty()) return e;
  fs::path self = executable_dir();
  // Installed (bin/ beside share/rfa/models), then a build tree inside or beside the sources.
  for (fs::path p : {self / ".." / "share" / "rfa" / "models" / "spiral-filter", self / ".." / "models" / "spiral-filter",
                     self / "models" / "spiral-filter", fs::path(RFA_SOURCE_DIR) / "models" / "spiral-filter"})
    if (fs::exists(p / "config.json")) return fs::weakly_canonical(p).string();
  return (fs::path(RFA_SOURCE_DIR) / "models" / "spiral-filter").string();
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if ((unsigned char)c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o;
}

// The (layer, head) pairs of --dump-attention.
Result<std::vector<std::pair<int, int>>> parse_dump_spec(const std::string& spec, int layers, int heads) {
  std::vector<std::pair<int, int>> out;
  if (spec.empty()) return out;
  if (spec == "all") {
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < heads; ++h) out.push_back({l, h});
    return out;
  }
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto colon = item.find(':');
    long long l = 0, h = 0;
    if (colon == std::string::npos || !parse_int(item.substr(0, colon), 0, layers - 1, &l) ||
        !parse_int(item.substr(colon + 1), 0, heads - 1, &h))
      return Status(Code::invalid_argument, "--dump-attention: '" + item + "' is not L:H with layer < " +
                                                std::to_string(layers) + " and head < " + std::to_string(heads));
    out.push_back({(int)l, (int)h});
  }
  return out;
}

// Non-finite numbers (Brownian heads' stationary variance) become JSON null.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// --summary --json: the model and every head's physical parameters and regime, one JSON object.
void print_summary_json(const Model& m, const ModelInfo& info) {
  std::printf("{\"model\":\"%s\",\"architecture\":\"%s\",\"layers\":%d,\"heads\":%d,\"head_dim\":%d,"
              "\"d_e\":%d,\"attention_window\":%d,\"heads_detail\":[",
              json_escape(info.name).c_str(), info.architecture.c_str(), info.layers, info.heads, info.head_dim, info.d_e,
              info.attention_window);
  const auto hs = head_summaries(m);
  for (size_t i = 0; i < hs.size(); ++i) {
    const HeadSummary& h = hs[i];
    const HeadParams& p = h.params;
    std::printf("%s{\"layer\":%d,\"head\":%d,\"mu\":%s,\"omega_min\":%s,\"omega_max\":%s,\"sigma2\":%s,"
                "\"s2t\":%s,\"eta2\":%s,\"gamma2\":%s,\"nu\":%s,\"kappa\":%s,\"tau\":%s,\"lag_shift\":%s,"
                "\"stationary_variance\":%s,\"alpha\":%s,\"beta\":%s,\"regime\":\"%s\"}",
                i ? "," : "", h.layer, h.head, num(p.mu).c_str(), num(h.omega_min).c_str(), num(h.omega_max).c_str(),
                num(p.sigma2).c_str(), num(p.s2t).c_str(), num(p.eta2).c_str(), num(p.gamma2).c_str(),
                num(p.nu).c_str(), num(p.kappa).c_str(), num(p.tau).c_str(), num(p.lag_shift).c_str(),
                num(h.regime.stationary_variance).c_str(), num(h.regime.alpha).c_str(), num(h.regime.beta).c_str(),
                regime_name(h.regime.regime));
  }
  std::printf("]}\n");
}

}  // namespace

// The context outlives run() so that main can report validation messages seen during the run.
std::unique_ptr<Context> g_ctx;

namespace {

// run()'s steps return kGoOn to let it continue, or the exit code to stop with (as parse() does).
constexpr int kGoOn = -1;

using DumpPairs = std::vector<std::pair<int, int>>;

// --list-devices: one line per device, or a JSON array.
int print_devices(bool json) {
  auto devs = list_devices();
  if (!devs) return fail(devs.status());
  if (json) {
    std::printf("[");
    for (size_t i = 0; i < devs->size(); ++i) {
      const DeviceInfo& d = (*devs)[i];
      std::printf("%s{\"index\":%d,\"name\":\"%s\",\"type\":\"%s\",\"driver\":\"%s\",\"api\":\"%s\",\"compute\":%s}",
                  i ? "," : "", d.index, json_escape(d.name).c_str(), d.type.c_str(), json_escape(d.driver).c_str(),
                  d.api.c_str(), d.has_compute_queue ? "true" : "false");
    }
    std::printf("]\n");
  } else {
    for (const DeviceInfo& d : *devs)
      std::printf("%d: %s (%s), Vulkan %s, %s%s\n", d.index, d.name.c_str(), d.type.c_str(), d.api.c_str(),
                  d.driver.c_str(), d.has_compute_queue ? "" : " [no compute queue]");
  }
  return 0;
}

// Creates g_ctx on first use: only the modes that touch the device pay for it.
int need_context(const Args& a) {
  if (g_ctx) return kGoOn;
  ContextOptions copts;
  copts.device = a.device;
  copts.device_profile = a.device_profile;
  copts.verify_kernels = a.verify_kernels;
  copts.kernel_cache = a.kernel_cache;
  // The library never reads the environment: RFA_DEVICE, RFA_VALIDATION, RFA_DEVICE_PROFILE and
  // the kernel variables are read here, the flags first (rfa/environment.hpp).
  auto c = Context::create(context_options_from_environment(copts));
  if (!c) return fail(c.status());
  g_ctx = c.take();
  return kGoOn;
}

// The model folder, loaded, with what the later steps read from it.
struct Loaded {
  std::string dir;
  std::shared_ptr<const Model> model;
  ModelInfo info;
  double load_ms = 0;
};

// Loads --model (or the bundled default) and prints --summary.
int load(const Args& a, Loaded& out) {
  out.dir = a.model.empty() ? default_model() : a.model;
  auto t_load = std::chrono::steady_clock::now();
  auto model = load_model_dir(out.dir);
  if (!model) return fail(model.status(), 3);
  out.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  out.model = *model;
  out.info = model_info(*out.model);
  if (a.summary && !a.json) std::printf("%s\n", model_summary(*out.model).c_str());
  if (a.summary && a.json) print_summary_json(*out.model, out.info);
  return kGoOn;
}

// The input sequences, read and checked against the model.
struct Input {
  int B = 1, N = 0;
  std::vector<int64_t> ids;        // language models: [B, N] token ids
  std::vector<float> values;       // other models: [B, N, input_dim]
  std::vector<double> ts;          // [B, N] timestamps; empty: the default positions
  std::unique_ptr<Tokenizer> tok;  // when the input is a --prompt
};

// --prompt or --tokens for a language model.
int read_token_input(const Args& a, const Model& m, const ModelInfo& info, Input& in) {
  if (!a.signal.empty()) return fail(Status(Code::input_error, "--signal given, but this is a language model (use --prompt or --tokens)"));
  if (!a.prompt.empty()) {
    auto t = load_tokenizer(m);
    if (!t) return fail(t.status(), 3);
    in.tok = t.take();
    for (int id : in.tok->encode(a.prompt)) in.ids.push_back(id);
    in.N = (int)in.ids.size();
    if (in.N == 0) return fail(Status(Code::input_error, "--prompt is empty"));
  } else {
    auto arr = read_npy(a.tokens);
    if (!arr) return fail(Status(Code::input_error, arr.status().message()));
    if (!arr->is_integer) return fail(Status(Code::input_error, a.tokens + ": token ids must be int32 or int64, found " + arr->descr));
    if (arr->shape.size() == 1) in.N = (int)arr->shape[0];
    else if (arr->shape.size() == 2) in.B = (int)arr->shape[0], in.N = (int)arr->shape[1];
    else return fail(Status(Code::input_error, a.tokens + ": expected shape [N] or [B,N]"));
    in.ids = arr->ints;
  }
  for (size_t i = 0; i < in.ids.size(); ++i)
    if (in.ids[i] < 0 || in.ids[i] >= info.vocab)
      return fail(Status(Code::input_error, "token id " + std::to_string(in.ids[i]) + " at index " + std::to_string(i) +
                                                " is outside the vocabulary [0, " + std::to_string(info.vocab) + ")"));
  return kGoOn;
}

// --signal for signal and attention models.
int read_signal_input(const Args& a, const ModelInfo& info, Input& in) {
  if (a.signal.empty()) return fail(Status(Code::input_error, "this " + info.architecture + " model takes --signal FILE.npy"));
  if (a.generate) return fail(Status(Code::input_error, "--generate is for language models"));
  auto arr = read_npy(a.signal);
  if (!arr) return fail(Status(Code::input_error, arr.status().message()));
  if (arr->is_integer) return fail(Status(Code::input_error, a.signal + ": values must be float32 or float64, found " + arr->descr));
  int d = 0;
  if (arr->shape.size() == 2) in.N = (int)arr->shape[0], d = (int)arr->shape[1];
  else if (arr->shape.size() == 3) in.B = (int)arr->shape[0], in.N = (int)arr->shape[1], d = (int)arr->shape[2];
  else return fail(Status(Code::input_error, a.signal + ": expected shape [N,d] or [B,N,d]"));
  if (d != info.input_dim)
    return fail(Status(Code::input_error, a.signal + ": last dimension is " + std::to_string(d) + ", the model expects " +
                                              std::to_string(info.input_dim)));
  in.values.assign(arr->values.begin(), arr->values.end());
  for (size_t i = 0; i < in.values.size(); ++i)
    if (!std::isfinite(in.values[i]))
      return fail(Status(Code::input_error, a.signal + ": value " + std::to_string(i) + " is not finite (or overflows float32)"));
  return kGoOn;
}

// --timestamps: [N] (every row) or [B, N], finite and non-decreasing per row.
int read_timestamps(const Args& a, const ModelInfo& info, Input& in) {
  if (!a.timestamps.empty() && info.t_equal) {
    std::fprintf(stderr, "rfa-run: note: this model has t_equal = true: positions are its timestamps and "
                         "--timestamps is ignored, as in the reference\n");
    return kGoOn;
  }
  if (a.timestamps.empty()) return kGoOn;
  const int B = in.B, N = in.N;
  std::vector<double>& ts = in.ts;
  auto arr = read_npy(a.timestamps);
  if (!arr) return fail(Status(Code::input_error, arr.status().message()));
  std::vector<double> t = arr->is_integer ? std::vector<double>(arr->ints.begin(), arr->ints.end()) : arr->values;
  if (arr->shape.size() == 1 && arr->shape[0] == N) {
    for (int b = 0; b < B; ++b) ts.insert(ts.end(), t.begin(), t.end());
  } else if (arr->shape.size() == 2 && arr->shape[0] == B && arr->shape[1] == N) {
    ts = t;
  } else {
    return fail(Status(Code::input_error, a.timestamps + ": expected shape [" + std::to_string(N) + "] or [" +
                                              std::to_string(B) + "," + std::to_string(N) + "]"));
  }
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) {
      double v = ts[(size_t)b * N + i];
      if (!std::isfinite(v))
        return fail(Status(Code::input_error, a.timestamps + ": timestamp at row " + std::to_string(b) + ", position " + std::to_string(i) + " is not finite"));
      if (i > 0 && v < ts[(size_t)b * N + i - 1])
        return fail(Status(Code::input_error, a.timestamps + ": timestamps decrease at row " + std::to_string(b) +
                                                  ", position " + std::to_string(i) + " (they must be non-decreasing)"));
    }
  return kGoOn;
}

// Every input of the run, in the order its errors are reported.
int read_input(const Args& a, const Loaded& l, Input& in) {
  const int rc = l.info.architecture == "lm" ? read_token_input(a, *l.model, l.info, in) : read_signal_input(a, l.info, in);
  if (rc != kGoOn) return rc;
  if (in.N <= 0 || in.B <= 0) return fail(Status(Code::input_error, "the input is empty"));
  if (int r = read_timestamps(a, l.info, in); r != kGoOn) return r;
  if (a.generate && !in.ts.empty())
    return fail(Status(Code::input_error, "--generate with --timestamps: generated tokens would need timestamps too"));
  return kGoOn;
}

// --dump-attention's pairs, and the --dump folder created.
int prepare_dump(const Args& a, const ModelInfo& info, DumpPairs& pairs) {
  auto p = parse_dump_spec(a.dump_attention, info.layers, info.heads);
  if (!p) return usage_error(p.status().message());
  pairs = p.take();
  if (!a.dump.empty()) {
    std::error_code ec;
    fs::create_directories(a.dump, ec);
    if (ec) return fail(Status(Code::io_error, "--dump " + a.dump + ": " + ec.message()), 4);
  }
  return kGoOn;
}

// What a run produced, for the dump and the report.
struct Outputs {
  int positions = 0;           // positions fed per batch row
  std::vector<float> outputs;  // [B][positions][out_dim]
  std::vector<std::pair<std::string, std::vector<float>>> attn_dumps;
  std::vector<int64_t> generated;
  double gpu_ms = 0, generate_ms = 0;
  std::string device_name = "cpu-reference (double)";
};

// The two files of (layer, head): Ahat and the decayed A.
void add_attention_dump(Outputs& out, int layer, int head, std::vector<float> ahat, std::vector<float> a) {
  const std::string lh = "_L" + std::to_string(layer) + "_H" + std::to_string(head) + ".npy";
  out.attn_dumps.push_back({"attn" + lh, std::move(ahat)});
  out.attn_dumps.push_back({"attn_decayed" + lh, std::move(a)});
}

// --cpu-reference: the double-precision twin. It has no cache: generation re-runs the growing sequence.
int run_cpu_twin(const Args& a, const Loaded& l, const Input& in, const DumpPairs& pairs, Outputs& out) {
  const int B = in.B, V = l.info.output_dim;
  Sampler sampler(a.sampler);
  std::vector<int64_t> seq = in.ids;
  int n = in.N;
  std::vector<double> res;
  std::vector<ReferenceAttention> maps;
  std::vector<double> values(in.values.begin(), in.values.end());
  Progress progress(a.generate ? "generating on the CPU twin" : "running the CPU twin", a.generate, "tokens");
  for (;;) {
    progress.set((long)out.generated.size());
    maps.clear();
    auto r = reference_forward(*l.model, B, n, values.empty() ? nullptr : values.data(), seq.empty() ? nullptr : seq.data(),
                               in.ts.empty() ? nullptr : in.ts.data(), pairs, &maps, a.window);
    if (!r) return fail(r.status());
    res = r.take();
    if ((int)out.generated.size() == a.generate) break;
    std::vector<int64_t> next_seq;
    for (int b = 0; b < B; ++b) {
      std::vector<float> last(res.begin() + ((size_t)b * n + n - 1) * V, res.begin() + ((size_t)b * n + n) * V);
      int64_t t = sampler.next(last.data(), V);
      if (b == 0) out.generated.push_back(t);
      next_seq.insert(next_seq.end(), seq.begin() + (size_t)b * n, seq.begin() + (size_t)(b + 1) * n);
      next_seq.push_back(t);
    }
    if ((int)out.generated.size() == a.generate) break;  // the last token is printed, not fed
    seq = next_seq;
    ++n;
  }
  out.outputs.assign(res.begin(), res.end());
  for (auto& c : maps)
    add_attention_dump(out, c.layer, c.head, std::vector<float>(c.ahat.begin(), c.ahat.end()),
                       std::vector<float>(c.a.begin(), c.a.end()));
  out.positions = n;
  return kGoOn;
}

using RowOutputs = std::vector<std::vector<float>>;  // per batch row: [positions][out_dim]

// Feeds positions [pos0, pos0 + count) of every row and appends their outputs to `rows`.
Status feed(Session& S, const ModelInfo& info, const Input& in, int pos0, int count, RowOutputs& rows, double& gpu_ms) {
  const int B = in.B, N = in.N;
  std::vector<double> tsl;
  if (!in.ts.empty())
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < count; ++i) tsl.push_back(in.ts[(size_t)b * N + pos0 + i]);
  Status st;
  if (info.architecture == "lm") {
    std::vector<int64_t> x;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < count; ++i) x.push_back(in.ids[(size_t)b * N + pos0 + i]);
    st = S.prefill_tokens(x, count, tsl);
  } else {
    std::vector<float> x;
    const int d = info.input_dim;
    for (int b = 0; b < B; ++b)
      x.insert(x.end(), in.values.begin() + ((size_t)b * N + pos0) * d, in.values.begin() + ((size_t)b * N + pos0 + count) * d);
    st = S.prefill_values(x, count, tsl);
  }
  if (!st.ok()) return st;
  const int V = info.output_dim;
  const auto& o = S.outputs();
  int c = S.output_count();
  for (int b = 0; b < B; ++b)
    rows[(size_t)b].insert(rows[(size_t)b].end(), o.begin() + (size_t)b * c * V, o.begin() + (size_t)(b + 1) * c * V);
  gpu_ms += S.last_gpu_ms();
  return st;
}

// --generate on the device: sampled on the GPU, each token fed on the device; only token ids come
// back (and, for a dump, every fed position's logits). The last token is printed, not fed. Every
// row's tokens are kept in `row_tokens` (a replay for the attention maps feeds them again).
int generate_on_device(const Args& a, int V, int B, Session& S, RowOutputs& rows, Outputs& out,
                       std::vector<std::vector<int64_t>>& row_tokens) {
  Progress progress("generating", a.generate, "tokens");
  GenerateOptions go;
  go.tokens = a.generate;
  go.sampler = a.sampler;
  go.keep_outputs = !a.dump.empty();
  row_tokens.assign((size_t)B, {});
  go.on_token = [&](int k, const std::vector<int64_t>& tokens) {
    progress.set(k + 1);
    out.generated.push_back(tokens[0]);
    for (int b = 0; b < B; ++b) row_tokens[(size_t)b].push_back(tokens[(size_t)b]);
  };
  auto g = S.generate(go);
  if (!g) return fail(g.status());
  out.gpu_ms += g->gpu_ms;
  out.generate_ms = g->wall_ms;
  const size_t per = (size_t)(a.generate - 1) * V;
  for (int b = 0; b < B && go.keep_outputs; ++b)
    rows[(size_t)b].insert(rows[(size_t)b].end(), g->outputs.begin() + (size_t)b * per,
                           g->outputs.begin() + (size_t)(b + 1) * per);
  return kGoOn;
}

// Feeds the whole input: one prefill, or one position at a time (--stream). While attention maps
// are collected, the input goes in by pieces that the maps probe before the window forgets their
// keys (dump::AttentionMaps); the session splits a windowed prefill at the same boundaries itself,
// so the outputs are the same.
int feed_input(const Args& a, const ModelInfo& info, const Input& in, Session& S, dump::AttentionMaps& maps,
               RowOutputs& rows, double& gpu_ms) {
  const int N = in.N;
  const int piece = maps.empty() ? N : std::max(1, dump::AttentionMaps::piece(S));
  const int step = a.stream ? 1 : piece;
  Progress progress(a.stream ? "streaming" : "prefill of " + std::to_string(N) + " positions", a.stream ? N : 0,
                    "positions");
  for (int p0 = 0; p0 < N; p0 += step) {
    const int count = std::min(step, N - p0);
    if (Status st = feed(S, info, in, p0, count, rows, gpu_ms); !st.ok()) return fail(st);
    if (a.stream) progress.set(p0 + count);
    if (!maps.empty() && (S.position() - maps.done() >= piece || p0 + count == N))
      if (Status st = maps.probe(S); !st.ok()) return probe_fail(st);
  }
  Progress::interrupt();
  return kGoOn;
}

// The maps of positions a windowed generation fed past what its ring still holds: the prompt and
// the fed tokens again, through a fresh session, by pieces (prefill and generation give the same
// numbers to fp32 tolerance; only the maps are kept).
int replay_for_maps(const Loaded& l, const Input& in, const std::vector<std::vector<int64_t>>& row_tokens,
                    SessionOptions so, dump::AttentionMaps& maps) {
  Input r;
  r.B = in.B;
  r.N = in.N + (int)row_tokens[0].size() - 1;  // the last token is printed, not fed
  for (int b = 0; b < in.B; ++b) {
    r.ids.insert(r.ids.end(), in.ids.begin() + (size_t)b * in.N, in.ids.begin() + (size_t)(b + 1) * in.N);
    r.ids.insert(r.ids.end(), row_tokens[(size_t)b].begin(), row_tokens[(size_t)b].end() - 1);
  }
  so.last_output_only = true;
  auto s = Session::create(*g_ctx, l.model, so);
  if (!s) return fail(s.status());
  Args quiet;  // a prefill by pieces, no progress line of its own
  RowOutputs discard((size_t)in.B);
  double ms = 0;
  maps.restart();
  return feed_input(quiet, l.info, r, **s, maps, discard, ms);
}

// The default mode: a session on the device, prefilled at once or streamed (--stream), then
// --generate; --dump-attention's maps are probed as the positions go in, --dump-diagnostics reads
// the caches at the end.
int run_on_device(const Args& a, const Loaded& l, const Input& in, const DumpPairs& pairs, Outputs& out) {
  if (int rc = need_context(a); rc != kGoOn) return rc;
  const int B = in.B, N = in.N, total = N + a.generate;
  out.device_name = g_ctx->device_info().name;
  SessionOptions so;
  so.batch = B;
  so.max_context = a.max_context ? a.max_context : total;
  so.last_output_only = a.dump.empty();  // only the dump needs every position's output
  so.window = a.window;  // 0: the model's own (args.attention_window); -1: none
  so.kv = a.kv;
  const int window = a.window > 0 ? a.window : a.window < 0 ? 0 : l.info.attention_window;
  if (window == 0 && so.max_context < total)
    return fail(Status(Code::input_error, "--max-context " + std::to_string(so.max_context) + " is shorter than the " +
                                              std::to_string(total) + " positions to run"));
  auto s = Session::create(*g_ctx, l.model, so);
  if (!s) return fail(s.status());
  Session& S = **s;
  dump::AttentionMaps maps(pairs, B, N + std::max(0, a.generate - 1));
  RowOutputs rows((size_t)B);
  if (int rc = feed_input(a, l.info, in, S, maps, rows, out.gpu_ms); rc != kGoOn) return rc;
  std::vector<std::vector<int64_t>> row_tokens;
  if (a.generate > 0)
    if (int rc = generate_on_device(a, l.info.output_dim, B, S, rows, out, row_tokens); rc != kGoOn) return rc;
  for (int b = 0; b < B; ++b) out.outputs.insert(out.outputs.end(), rows[(size_t)b].begin(), rows[(size_t)b].end());
  if (!maps.empty() && maps.done() < S.position()) {  // the generated positions
    if (maps.reachable(S)) {
      if (Status st = maps.probe(S); !st.ok()) return probe_fail(st);
    } else if (int rc = replay_for_maps(l, in, row_tokens, so, maps); rc != kGoOn) {
      return rc;
    }
  }
  out.attn_dumps = maps.take();
  if (!a.diagnostics.dir.empty())
    if (Status st = dump::write_diagnostics(S, a.diagnostics); !st.ok()) return probe_fail(st);
  out.positions = S.position();
  return kGoOn;
}

// --dump: output.npy and the attention maps.
int write_dump(const Args& a, int B, int V, const Outputs& out) {
  const int N = out.positions;
  Status st = write_npy_f32((fs::path(a.dump) / "output.npy").string(), {B, N, V}, out.outputs);
  if (!st.ok()) return fail(st, 5);
  for (auto& [name, data] : out.attn_dumps) {
    st = write_npy_f32((fs::path(a.dump) / name).string(), {B, N, N}, data);
    if (!st.ok()) return fail(st, 5);
  }
  return kGoOn;
}

// The result: generated text or ids on stdout and a line on stderr, or one JSON object (--json).
void print_report(const Args& a, const Loaded& l, const Input& in, const Outputs& out, double run_ms) {
  const ModelInfo& info = l.info;
  const int B = in.B, N = out.positions, V = info.output_dim;
  std::string text;
  if (in.tok && !out.generated.empty()) {
    std::vector<int> g(out.generated.begin(), out.generated.end());
    text = in.tok->decode(g);
  }
  if (a.json) {
    std::printf("{\"device\":\"%s\",\"model\":\"%s\",\"architecture\":\"%s\",\"batch\":%d,\"positions\":%d,"
                "\"output_dim\":%d,\"mode\":\"%s\",\"load_ms\":%.3f,\"run_ms\":%.3f,\"gpu_ms\":%.3f",
                json_escape(out.device_name).c_str(), json_escape(l.dir).c_str(), info.architecture.c_str(), B, N, V,
                a.cpu ? "cpu-reference" : a.stream ? "stream" : "prefill", l.load_ms, run_ms, out.gpu_ms);
    if (!out.generated.empty()) {
      if (!a.cpu && out.generated.size() > 1)
        std::printf(",\"generate_ms\":%.3f,\"ms_per_token\":%.4f", out.generate_ms,
                    out.generate_ms / (double)(out.generated.size() - 1));
      std::printf(",\"generated\":[");
      for (size_t i = 0; i < out.generated.size(); ++i)
        std::printf("%s%lld", i ? "," : "", (long long)out.generated[i]);
      std::printf("],\"text\":\"%s\"", json_escape(text).c_str());
    }
    // The paths the kernel check refused (--verify-kernels), each with its reason.
    if (g_ctx && !a.cpu) {
      const std::vector<std::string> refused = g_ctx->kernel_refusals();
      std::printf(",\"kernel_refusals\":[");
      for (size_t i = 0; i < refused.size(); ++i) std::printf("%s\"%s\"", i ? "," : "", json_escape(refused[i]).c_str());
      std::printf("]");
    }
    std::printf("}\n");
  } else {
    if (info.architecture == "lm" && !a.prompt.empty()) std::printf("%s%s\n", a.prompt.c_str(), text.c_str());
    else if (!out.generated.empty()) {
      for (auto g : out.generated) std::printf("%lld ", (long long)g);
      std::printf("\n");
    }
    std::fprintf(stderr, "%s: %s model, %d x %d positions, %s in %.1f ms (GPU %.1f ms)%s\n", out.device_name.c_str(),
                 info.architecture.c_str(), B, N, a.cpu ? "cpu-reference" : a.stream ? "streamed" : "prefilled", run_ms,
                 out.gpu_ms, a.dump.empty() ? "" : (", wrote " + a.dump).c_str());
  }
}

}  // namespace

int run(int argc, char** argv) {
  Args a;
  if (int rc = cli::parse(argc, argv, a); rc != cli::kParsed) return rc;
  if (a.version) {
    std::printf("rfa-run %s\n", rfa::version());
    return 0;
  }
  if (a.list_devices) return print_devices(a.json);
  if (a.device_profile == "list") {
    for (const DeviceProfileInfo& p : device_profiles())
      std::printf("%-22s %s\n%-22s   from Vulkan-Profiles %s\n", p.name.c_str(), p.description.c_str(), "",
                  p.source.c_str());
    return 0;
  }
  if (a.self_check) {
    if (int rc = need_context(a); rc != kGoOn) return rc;
    return run_self_check(*g_ctx, a.json);
  }

  Loaded l;
  if (int rc = load(a, l); rc != kGoOn) return rc;
  const bool no_input = a.prompt.empty() && a.tokens.empty() && a.signal.empty();
  if (no_input && a.summary) return 0;
  if (no_input) {
    if (l.info.architecture == "signal" && l.info.d_in == 2) {
      if (!a.cpu)
        if (int rc = need_context(a); rc != kGoOn) return rc;
      return run_spiral_demo(g_ctx.get(), l.model, a.json, a.cpu);
    }
    return usage_error("no input: give --prompt, --tokens or --signal");
  }

  Input in;
  if (int rc = read_input(a, l, in); rc != kGoOn) return rc;
  DumpPairs pairs;
  if (int rc = prepare_dump(a, l.info, pairs); rc != kGoOn) return rc;

  Outputs out;
  auto t_run = std::chrono::steady_clock::now();
  const int rc = a.cpu ? run_cpu_twin(a, l, in, pairs, out) : run_on_device(a, l, in, pairs, out);
  if (rc != kGoOn) return rc;
  const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_run).count();

  if (!a.dump.empty())
    if (int r = write_dump(a, in.B, l.info.output_dim, out); r != kGoOn) return r;
  print_report(a, l, in, out, run_ms);
  return 0;
}

int main(int argc, char** argv) {
  int rc = run(argc, argv);
  // Under RFA_VALIDATION=1 any validation message makes the run fail (the tests rely on it).
  if (g_ctx && g_ctx->validation_message_count() > 0) {
    std::fprintf(stderr, "rfa-run: %llu Vulkan validation message(s) were reported\n",
                 (unsigned long long)g_ctx->validation_message_count());
    if (rc == 0) rc = 5;
  }
  g_ctx.reset();
  return rc;
}
