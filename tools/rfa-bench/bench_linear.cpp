// Linear y = x W^T + b: GPU GFLOP/s for model-like shapes next to a naive single-threaded CPU loop
// measured in the same run (the ratio is the figure to quote: this machine is shared and noisy).
#include <chrono>
#include <cstdio>
#include <random>

#include "bench.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "ops/linear.hpp"
#include "rfa/context.hpp"
#include "core/access.hpp"

namespace rfa::bench {

namespace {

struct Shape {
  uint32_t rows, in, out;
  const char* what;
};

double cpu_naive_ms(const Shape& s, const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& b, std::vector<float>& y) {
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t r = 0; r < s.rows; ++r)
    for (uint32_t o = 0; o < s.out; ++o) {
      float acc = b[o];
      const float* xr = &x[(size_t)r * s.in];
      const float* wr = &w[(size_t)o * s.in];
      for (uint32_t k = 0; k < s.in; ++k) acc += xr[k] * wr[k];
      y[(size_t)r * s.out + o] = acc;
    }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int bench_linear(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json");
  const int reps = std::max(1, std::atoi(option(args, "--reps", "5").c_str()));
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;
  gpu::Context& g = gpu_of(*ctx);
  const std::string device = g.caps().device_name;
  const Shape shapes[] = {
      {512, 256, 256, "prefill projection (N=512, d_e=256)"},
      {512, 256, 1024, "prefill FFN up (N=512)"},
      {2048, 1024, 256, "prefill FFN down (N=2048)"},
      {1, 256, 1024, "decode FFN up (1 row)"},
      {1, 256, 50257, "decode LM head (vocab 50257)"},
  };
  if (!json)
    std::printf("%-40s %10s %10s %10s %10s %8s\n", "shape (rows x in -> out)", "gpu ms", "GFLOP/s", "cpu ms",
                "cpu GF/s", "speedup");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Shape& s : shapes) {
    std::vector<float> x((size_t)s.rows * s.in), w((size_t)s.out * s.in), b(s.out), y((size_t)s.rows * s.out);
    for (auto* v : {&x, &w, &b})
      for (float& f : *v) f = d(rng);
    auto bx = g.allocator().allocate(x.size() * 4, gpu::MemoryKind::device, "x");
    auto bw = g.allocator().allocate(w.size() * 4, gpu::MemoryKind::device, "w");
    auto bb = g.allocator().allocate(b.size() * 4, gpu::MemoryKind::device, "b");
    auto by = g.allocator().allocate(y.size() * 4, gpu::MemoryKind::device, "y");
    if (!bx || !bw || !bb || !by) {
      std::fprintf(stderr, "rfa-bench: allocation failed\n");
      return 5;
    }
    g.upload(*bx, x.data(), x.size() * 4);
    g.upload(*bw, w.data(), w.size() * 4);
    g.upload(*bb, b.data(), b.size() * 4);
    gpu::Recorder rec(g);
    std::vector<double> gpu_ms, wall_ms;
    for (int r = 0; r < reps + 1; ++r) {  // the first run builds the pipeline: not counted
      auto t0 = std::chrono::steady_clock::now();
      Status st = rec.begin();
      if (st.ok()) st = ops::record_linear(g, rec, *bx, *bw, &*bb, *by, {s.rows, s.in, s.out});
      if (st.ok()) st = rec.submit_and_wait();
      if (!st.ok()) {
        std::fprintf(stderr, "rfa-bench: %s\n", st.to_string().c_str());
        return 5;
      }
      double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r == 0) continue;
      wall_ms.push_back(wall);
      gpu_ms.push_back(rec.timings().empty() ? wall : rec.gpu_ms_total());
    }
    double cpu_ms = cpu_naive_ms(s, x, w, b, y);
    double flops = 2.0 * s.rows * s.in * s.out;
    double gms = median(gpu_ms), gflops = flops / (gms * 1e6), cflops = flops / (cpu_ms * 1e6);
    if (json) {
      std::printf("{\"bench\":\"linear\",\"rows\":%u,\"in\":%u,\"out\":%u,\"gpu_ms\":%.4f,\"wall_ms\":%.4f,"
                  "\"gflops\":%.3f,\"cpu_naive_ms\":%.4f,\"cpu_gflops\":%.3f,\"speedup\":%.2f,\"device\":\"%s\"}\n",
                  s.rows, s.in, s.out, gms, median(wall_ms), gflops, cpu_ms, cflops, cpu_ms / gms, device.c_str());
    } else {
      char name[64];
      std::snprintf(name, sizeof name, "%u x %u -> %u", s.rows, s.in, s.out);
      std::printf("%-40s %10.3f %10.2f %10.3f %10.2f %7.1fx   %s\n", name, gms, gflops, cpu_ms, cflops, cpu_ms / gms, s.what);
    }
  }
  if (!json) std::printf("device: %s; gpu ms = median of %d runs (GPU timestamps when available)\n", device.c_str(), reps);
  return 0;
}

}  // namespace rfa::bench
