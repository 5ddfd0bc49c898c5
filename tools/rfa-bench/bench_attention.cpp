// Fused RFA attention (prefill of N positions, causal) against the runtime's SDPA kernel on the
// same caches and the same tiling, in the same run: the ratio is the figure to quote. Times the
// fused kernel alone (the rotate pass is reported separately); peak memory is the allocator's
// high-water mark over the op's buffers (caches, projections, output), linear in N by design.
// --decode times one decode step instead (one query row per head over N keys) and reports the
// K/V bytes it reads per second; --kv f16 runs on fp16 K/V caches. Every line names the path the
// kernel took and why (the tiling struct, chosen from the device and the shape).
// --stats adds, under each line (in its JSON: a `stats` object), every pipeline that run dispatched
// (rotate, lag table, the attention kernel of the path taken, split-k's reduce): a static count of
// its SPIR-V and whatever the driver reports through VK_KHR_pipeline_executable_properties
// (registers, spills, instruction counts), or why the driver reports nothing.
#include "bench_attention.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "bench.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/pipeline_stats.hpp"
#include "gpu/recorder.hpp"
#include "mechanisms/mechanism.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/sdpa.hpp"
#include "rfa/context.hpp"
#include "core/access.hpp"

namespace rfa::bench {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double softplus(double x) { return std::log1p(std::exp(x)); }

// M2 (SC-RFA at initialisation, docs/reference-code.md §3.5), M1 (RoPE bank, rescaled mu) and M2.6 (pure
// rotation) in physical form; AFA (docs/variant-afa.md: M2's bank, one decay per conjugate pair
// spread over the head's range, rfa-make-model's noises; AFA_FULL the same parameters in the full
// form of docs/variant-afa-full.md; either with _IRLS<n>, n tied iterations with the mix gate) and RT
// (docs/variant-rt.md §4's initial values on M2's bank and decays).
AttentionParams variant_params(const std::string& name, int H, int D) {
  AttentionParams p;
  p.heads = H;
  p.dim = D;
  const int half = D / 2;
  const size_t irls = name.find("_IRLS");
  if (irls != std::string::npos && name.rfind("AFA", 0) == 0) {
    p = variant_params(name.substr(0, irls), H, D);
    p.afa.irls_iterations = std::atoi(name.c_str() + irls + 5);
    p.afa.mix = true;
    p.afa.delta.assign(p.afa.mu.size(), 0.0);  // gate 0.5
    return p;
  }
  if (name == "AFA_FULL") {
    p = variant_params("AFA", H, D);
    p.variant = AttentionVariant::afa_full;
    return p;
  }
  if (name == "AFA" || name == "RT") {
    const AttentionParams m2 = variant_params("M2", H, D);
    p.omega = m2.omega;
    p.head.assign((size_t)H, HeadParams{});
    if (name == "AFA") {
      p.variant = AttentionVariant::afa;
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          p.afa.mu.push_back(0.1 * (d / 2 + 1) / half);
          p.afa.sigma2.push_back(0.1);
          p.afa.eta2.push_back(1.0);
          p.afa.gamma2.push_back(0.1);
        }
        p.afa.nu.push_back(1.0);
        p.afa.alpha.push_back(1.0);
      }
    } else {
      p.variant = AttentionVariant::rt;
      for (int h = 0; h < H; ++h) {
        p.rt.mu.push_back(m2.head[(size_t)h].mu);
        p.rt.s2t.push_back(0.1);
        p.rt.sigma2.push_back(0.0);
        p.rt.eta2.push_back(1.0);
        p.rt.gamma2.push_back(0.25);
        p.rt.tau_th2.push_back(0.01);
        p.rt.nu.push_back(D * softplus(4.0) + 2);
        p.rt.beta.push_back(softplus(1.0));
      }
    }
    return p;
  }
  for (int h = 0; h < H; ++h) {
    double wmax = 0;
    for (int k = 0; k < half; ++k) {
      const double w = name == "M1" ? std::pow(10000.0, -(double)k / half)
                                    : std::pow(10000.0, -(double)(H * half - 1 - half * h - k) / (H * half));
      wmax = std::max(wmax, w);
      p.omega.push_back(w);
      p.omega.push_back(-w);
    }
    HeadParams hp;
    const double mu0 = h < std::max(1, H / 4) ? 0.0 : 0.05 * wmax;
    hp.mu = name == "M1" ? mu0 * 5.0 / 511.0 : mu0;
    hp.sigma2 = std::max(0.2 * mu0, 1e-6);
    hp.eta2 = hp.gamma2 = softplus(1.0) + 1e-5;
    hp.nu = D * softplus(4.0) + 2 + 1e-5;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = softplus(1.0) + 1e-5;
    hp.lag_shift = softplus(0.0);
    p.head.push_back(hp);
  }
  if (name == "M2.6") {
    for (auto& hp : p.head) hp.mu = hp.sigma2 = hp.eta2 = 0;
    p.sw.robust = false;
    p.sw.full_residual = false;
    p.sw.additive_bias = AdditiveBias::none;
    p.sw.precision = RobustPrecision::inv_sqrt_d;
  }
  return p;
}

struct Measured {
  double gpu_ms = 0, wall_ms = 0, rotate_ms = 0;
  uint64_t peak = 0;
  std::string path;
  std::vector<const gpu::Pipeline*> kernels;  // every pipeline the run dispatched, first use first
  bool ok = false;
};

void note_kernels(const gpu::Recorder& rec, std::vector<const gpu::Pipeline*>& kernels) {
  for (const gpu::Pipeline* p : rec.pipelines_used())
    if (std::find(kernels.begin(), kernels.end(), p) == kernels.end()) kernels.push_back(p);
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if ((unsigned char)c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string spec_list(const std::vector<uint32_t>& spec) {
  std::string o;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i) o += ',';  // appended apart: g++ 12's -Wrestrict misfires on ("," + std::string)
    o += std::to_string(spec[i]);
  }
  return o;
}

// The `stats` object of a JSON line: the driver, then one entry per kernel.
std::string stats_json(const std::string& driver, const std::vector<gpu::PipelineStatistics>& ks) {
  std::string o = "{\"driver\":" + json_string(driver) + ",\"kernels\":[";
  for (size_t k = 0; k < ks.size(); ++k) {
    const auto& s = ks[k];
    o += (k ? "," : "");
    o += "{\"shader\":" + json_string(s.shader) + ",\"spec\":[" + spec_list(s.spec) + "]";
    o += ",\"spirv\":{\"functions\":" + std::to_string(s.spirv.functions) +
         ",\"instructions\":" + std::to_string(s.spirv.instructions) + ",\"inlined\":" +
         std::to_string(s.spirv.inlined) + ",\"loops\":" + std::to_string(s.spirv.loops) +
         ",\"innermost_loop\":" + std::to_string(s.spirv.innermost_loop) + "}";
    o += std::string(",\"exposed\":") + (s.exposed ? "true" : "false");
    if (!s.note.empty()) o += ",\"note\":" + json_string(s.note);
    o += ",\"executables\":[";
    for (size_t e = 0; e < s.executables.size(); ++e) {
      const auto& ex = s.executables[e];
      o += (e ? "," : "");
      o += "{\"name\":" + json_string(ex.name) + ",\"description\":" + json_string(ex.description) +
           ",\"subgroup_size\":" + std::to_string(ex.subgroup_size) + ",\"statistics\":{";
      for (size_t i = 0; i < ex.statistics.size(); ++i) {
        if (i) o += ',';
        o += json_string(ex.statistics[i].name) + ":" + ex.statistics[i].text();
      }
      o += "}}";
    }
    o += "]}";
  }
  return o + "]}";
}

// One text line per kernel, under the benchmark's line.
void print_stats_text(const std::vector<gpu::PipelineStatistics>& ks) {
  for (const auto& s : ks) {
    std::printf("    kernel %s [spec %s]: SPIR-V %u instructions in %u functions, %u inlined, %u loops, innermost loop %u",
                s.shader.c_str(), spec_list(s.spec).c_str(), s.spirv.instructions, s.spirv.functions, s.spirv.inlined,
                s.spirv.loops, s.spirv.innermost_loop);
    for (const auto& ex : s.executables) {
      std::printf(" | %s (subgroup %u):", ex.name.c_str(), ex.subgroup_size);
      for (size_t i = 0; i < ex.statistics.size(); ++i)
        std::printf("%s %s = %s", i ? "," : "", ex.statistics[i].name.c_str(), ex.statistics[i].text().c_str());
    }
    if (!s.note.empty()) std::printf(" | %s", s.note.c_str());
    std::printf("\n");
  }
}

struct RunOptions {
  uint32_t N = 0, H = 8, D = 32, B = 1;
  int reps = 3;
  bool decode = false, kv_f16 = false;
};

Measured run(gpu::Context& g, const std::string& variant, const RunOptions& o) {
  const uint32_t N = o.N, H = o.H, D = o.D, B = o.B;
  const int reps = o.reps;
  Measured m;
  const bool sdpa = variant == "sdpa";
  const AttentionParams p = variant_params(sdpa ? "M2" : variant, (int)H, (int)D);
  g.allocator().reset_peak();
  const uint64_t base = g.allocator().used_bytes();
  auto w = ops::AttentionWeightsGpu::create(g, p);
  auto cache = ops::AttentionCache::create(g, B, H, D, N, "bench cache", 0, o.kv_f16);
  const uint64_t proj = (uint64_t)B * N * 2 * H * D * 4;
  auto q = g.allocator().allocate(proj, gpu::MemoryKind::device, "bench q");
  auto k = g.allocator().allocate(proj, gpu::MemoryKind::device, "bench k");
  auto v = g.allocator().allocate(proj, gpu::MemoryKind::device, "bench v");
  auto vn = g.allocator().allocate(proj, gpu::MemoryKind::device, "bench v_norm");
  auto out = g.allocator().allocate(proj, gpu::MemoryKind::device, "bench out");
  auto ts = g.allocator().allocate((uint64_t)B * N * 8, gpu::MemoryKind::device, "bench timestamps");
  if (!w || !cache || !q || !k || !v || !vn || !out || !ts) return m;
  {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> x(proj / 4);
    for (auto* b : {&*q, &*k, &*v}) {
      for (auto& e : x) e = u(rng);
      if (!g.upload(*b, x.data(), proj).ok()) return m;
    }
    std::vector<float> t((size_t)B * N * 2);
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t i = 0; i < N; ++i) ops::split_timestamp(i, &t[((size_t)b * N + i) * 2], &t[((size_t)b * N + i) * 2 + 1]);
    if (!g.upload(*ts, t.data(), t.size() * 4).ok()) return m;
  }
  gpu::Recorder rec(g);
  // The rotate pass fills the caches once (timed on its own).
  if (!rec.begin().ok()) return m;
  if (!ops::record_rfa_rotate(g, rec, *w, *cache, *ts, *q, *k, *v, *vn, {0, N}).ok()) return m;
  if (!rec.submit_and_wait().ok()) return m;
  note_kernels(rec, m.kernels);
  m.rotate_ms = rec.gpu_ms_total();
  // The integer-lag table, as a session builds it (unless RFA_ATTN_LAG_TABLE=0).
  if (g.kernels().attention_lag_table != 0) {
    if (!rec.begin().ok() || !ops::record_rfa_lag_table(g, rec, *w, *cache).ok() || !rec.submit_and_wait().ok())
      return m;
    note_kernels(rec, m.kernels);
  }
  // Prefill: rows [0, N); decode: the last row alone over all N keys.
  const ops::AttentionSpan span = o.decode ? ops::AttentionSpan{N - 1, 1, nullptr} : ops::AttentionSpan{0, N, nullptr};
  const ops::AttentionTiling t =
      mech::mechanism_of(p).tiling(g.caps(), g.kernels(), span.n_new, D, B * H, N, p.sw.gate);
  m.path = t.why;
  std::vector<double> gms, wms;
  for (int r = 0; r < reps + 1; ++r) {  // the first run builds the pipeline: not counted
    if (!rec.begin().ok()) return m;
    Status s = sdpa ? ops::record_sdpa(g, rec, *cache, *out, span.pos0, span.n_new)
                    : ops::record_rfa_fused(g, rec, *w, *cache, *ts, *vn, *out, span);
    if (!s.ok()) {
      std::fprintf(stderr, "rfa-bench: %s\n", s.to_string().c_str());
      return m;
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (!rec.submit_and_wait().ok()) return m;
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    note_kernels(rec, m.kernels);
    if (r == 0) continue;
    wms.push_back(wall);
    gms.push_back(rec.timings().empty() ? wall : rec.gpu_ms_total());
  }
  m.gpu_ms = median(gms);
  m.wall_ms = median(wms);
  m.peak = g.allocator().peak_bytes() - base;
  m.ok = true;
  return m;
}

}  // namespace

int bench_attention(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json");
  const bool stats = has_flag(args, "--stats");  // open_context asks the driver to capture them
  RunOptions ro;
  ro.reps = std::max(1, std::atoi(option(args, "--reps", "3").c_str()));
  ro.H = (uint32_t)std::atoi(option(args, "--heads", "8").c_str());
  ro.D = (uint32_t)std::atoi(option(args, "--dim", "32").c_str());
  ro.B = (uint32_t)std::atoi(option(args, "--batch", "1").c_str());
  ro.decode = has_flag(args, "--decode");
  const std::string kv = option(args, "--kv", "f32");
  if (kv != "f32" && kv != "f16") {
    std::fprintf(stderr, "rfa-bench attention: --kv expects f32 or f16, got '%s'\n", kv.c_str());
    return 2;
  }
  ro.kv_f16 = kv == "f16";
  const uint32_t H = ro.H, D = ro.D, B = ro.B;
  std::vector<uint32_t> ns;
  for (const auto& s : split_list(option(args, "--n", "256,1024,4096"))) ns.push_back((uint32_t)std::atoi(s.c_str()));
  std::vector<std::string> variants = split_list(option(args, "--variants", "M2,M1,M2.6"));
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;
  gpu::Context& g = gpu_of(*ctx);
  const std::string device = g.caps().device_name;
  const std::string driver =
      g.caps().driver_name + (g.caps().driver_info.empty() ? "" : " (" + g.caps().driver_info + ")");
  if (!json)
    std::printf("%-6s %6s %3s %3s %3s %10s %10s %9s %10s %7s %12s  %s\n", "var", "N", "H", "D", "B", "gpu ms", "wall ms",
                ro.decode ? "KV GB/s" : "GFLOP/s", "sdpa ms", "ratio", "peak bytes", "path");
  for (uint32_t N : ns) {
    ro.N = N;
    const Measured base = run(g, "sdpa", ro);
    if (!base.ok) {
      std::fprintf(stderr, "rfa-bench: sdpa failed at N = %u\n", N);
      return 5;
    }
    std::vector<std::string> all = variants;
    all.push_back("sdpa");
    for (const auto& var : all) {
      const Measured m = var == "sdpa" ? base : run(g, var, ro);
      if (!m.ok) {
        std::fprintf(stderr, "rfa-bench: %s failed at N = %u\n", var.c_str(), N);
        continue;
      }
      // Causal pairs times 8 D flops (4 D for Re(conj(q) k), 4 D for the complex accumulation).
      const double pairs = ro.decode ? (double)B * H * N : (double)B * H * N * (N + 1.0) / 2.0;
      const double gflops = pairs * 8.0 * D / (m.gpu_ms * 1e6);
      // Decode: the K and V caches of every key are read once (RFA's |K|^2 and times, 12 bytes a key,
      // are not counted).
      const double kv_bytes = (double)B * H * N * D * (ro.kv_f16 ? 4 : 8) * 2;
      const double kv_gbs = kv_bytes / (m.gpu_ms * 1e6);
      const double ratio = m.gpu_ms / base.gpu_ms;
      std::vector<gpu::PipelineStatistics> ks;
      if (stats)
        for (const gpu::Pipeline* p : m.kernels) {
          auto st = gpu::pipeline_statistics(g, *p);
          if (!st) {
            std::fprintf(stderr, "rfa-bench: --stats: %s\n", st.status().to_string().c_str());
            return 5;
          }
          ks.push_back(st.take());
        }
      if (json)
        std::printf("{\"bench\":\"attention\",\"variant\":\"%s\",\"mode\":\"%s\",\"kv\":\"%s\",\"n\":%u,"
                    "\"heads\":%u,\"dim\":%u,\"batch\":%u,\"ms\":%.4f,\"wall_ms\":%.4f,\"rotate_ms\":%.4f,"
                    "\"gflops\":%.3f,\"kv_gbs\":%.3f,\"sdpa_ms\":%.4f,\"ratio\":%.4f,\"peak_bytes\":%llu,"
                    "\"timestamps\":%s,\"path\":\"%s\",\"device\":\"%s\"%s%s}\n",
                    var.c_str(), ro.decode ? "decode" : "prefill", kv.c_str(), N, H, D, B, m.gpu_ms, m.wall_ms,
                    m.rotate_ms, gflops, kv_gbs, base.gpu_ms, ratio, (unsigned long long)m.peak,
                    g.timestamps_enabled() ? "true" : "false", m.path.c_str(), device.c_str(),
                    stats ? ",\"stats\":" : "", stats ? stats_json(driver, ks).c_str() : "");
      else
        std::printf("%-6s %6u %3u %3u %3u %10.3f %10.3f %9.2f %10.3f %7.3f %12llu  %s\n", var.c_str(), N, H, D, B,
                    m.gpu_ms, m.wall_ms, ro.decode ? kv_gbs : gflops, base.gpu_ms, ratio, (unsigned long long)m.peak,
                    m.path.c_str());
      if (stats && !json) print_stats_text(ks);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace rfa::bench
