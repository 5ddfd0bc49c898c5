// soak_check: CI's short soak (issue 33; rfa-bench stream --soak is the day-long one). Streams the
// bundled spiral-filter through a window of 64 for --steps positions (20,000 by default) and
// samples, every --every steps after a warm-up (the ring filled and wrapped, every plan made):
// the C heap's bytes in use (glibc mallinfo2, every arena), the device memory in use and held
// in blocks, and the resident set. Exit 1, naming what grew, when the device memory changes at
// all, or the C heap in use grows by more than --heap-kib (32 KiB: a leak of one allocation per 20
// steps shows), or the resident set by more than --rss-kib (2 MiB, which also holds the driver's
// and the allocator's pages). A program that judges memory, never time; the validation layer is
// off (its own bookkeeping is not the runtime's memory). --self-test proves the check bites: it
// leaks 48 bytes every 5 steps on purpose and succeeds only if the C heap check fails.
//   soak_check [--model DIR] [--steps N] [--every N] [--heap-kib K] [--rss-kib K] [--self-test]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/access.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "process_stats.hpp"
#include "rfa/environment.hpp"
#include "rfa/session.hpp"

namespace {

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == name) return argv[i + 1];
  return fallback;
}

struct Sample {
  long long step = 0;
  double heap_kib = 0, rss_kib = 0;
  uint64_t device_used = 0, device_held = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = arg(argc, argv, "--model", RFA_SOURCE_DIR "/models/spiral-filter");
  const long long steps = std::atoll(arg(argc, argv, "--steps", "20000").c_str());
  const long long every = std::atoll(arg(argc, argv, "--every", "2000").c_str());
  const double heap_kib = std::atof(arg(argc, argv, "--heap-kib", "32").c_str());
  const double rss_kib = std::atof(arg(argc, argv, "--rss-kib", "2048").c_str());
  bool self_test = false;
  for (int i = 1; i < argc; ++i) self_test = self_test || std::string(argv[i]) == "--self-test";
  std::vector<void*> leaked;  // --self-test's deliberate leak (freed at the end)
  rfa::ContextOptions o = rfa::context_options_from_environment();
  o.validation = 0;
  auto ctx = rfa::Context::create(o);
  auto model = rfa::load_model_dir(dir);
  if (!ctx || !model) {
    std::fprintf(stderr, "soak_check: %s\n", (!ctx ? ctx.status() : model.status()).to_string().c_str());
    return 2;
  }
  rfa::SessionOptions so;
  so.window = 64;
  so.last_output_only = true;
  auto s = rfa::Session::create(**ctx, *model, so);
  if (!s) return std::fprintf(stderr, "soak_check: %s\n", s.status().to_string().c_str()), 2;
  rfa::gpu::Allocator& al = rfa::gpu_of(**ctx).allocator();
  const long long warm = 4 * (long long)(*s)->max_context();  // the ring wrapped several times
  std::vector<Sample> samples;
  for (long long i = 0; i < warm + steps; ++i) {
    const double t = 0.37 * (double)i;
    const std::vector<float> x = {(float)(std::exp(-0.001 * (double)(i % 5000)) * std::cos(t)), (float)std::sin(0.5 * t)};
    if (self_test && i >= warm && i % 5 == 0) leaked.push_back(std::malloc(48));
    if (rfa::Status st = (*s)->step_values(x, {t}); !st) {
      std::fprintf(stderr, "soak_check: step %lld: %s\n", i, st.to_string().c_str());
      return 2;
    }
    if (i + 1 >= warm && (i + 1 - warm) % every == 0)
      samples.push_back({i + 1, rfa::bench::heap_in_use_mib() * 1024, rfa::bench::rss_mib() * 1024, al.used_bytes(),
                         al.reserved_bytes()});
  }
  const Sample& a = samples.front();
  const Sample& b = samples.back();
  std::printf("soak_check: %lld steps of %s through a window of %d after %lld of warm-up, on %s\n", steps,
              rfa::model_info(**model).name.c_str(), (*s)->window(), warm, (*ctx)->device_info().name.c_str());
  for (const Sample& x : samples)
    std::printf("  step %7lld: C heap in use %.1f KiB, RSS %.0f KiB, device %llu bytes in use, %llu held\n", x.step,
                x.heap_kib, x.rss_kib, (unsigned long long)x.device_used, (unsigned long long)x.device_held);
  int failures = 0;
  for (const Sample& x : samples)
    if (x.device_used != a.device_used || x.device_held != a.device_held) {
      std::printf("FAIL: device memory changed at step %lld: %llu -> %llu bytes in use, %llu -> %llu held\n", x.step,
                  (unsigned long long)a.device_used, (unsigned long long)x.device_used,
                  (unsigned long long)a.device_held, (unsigned long long)x.device_held);
      ++failures;
      break;
    }
  if (b.heap_kib - a.heap_kib > heap_kib) {
    std::printf("FAIL: the C heap in use grew by %.1f KiB over %lld steps (limit %.0f KiB)\n", b.heap_kib - a.heap_kib,
                b.step - a.step, heap_kib);
    ++failures;
  }
  if (b.rss_kib - a.rss_kib > rss_kib) {
    std::printf("FAIL: the resident set grew by %.0f KiB over %lld steps (limit %.0f KiB)\n", b.rss_kib - a.rss_kib,
                b.step - a.step, rss_kib);
    ++failures;
  }
  if (self_test) {
    const bool caught = b.heap_kib - a.heap_kib > heap_kib;
    std::printf("soak_check --self-test: a leak of 48 bytes every 5 steps %s\n", caught ? "was caught" : "was NOT caught");
    for (void* p : leaked) std::free(p);
    return caught ? 0 : 1;
  }
  if (!failures)
    std::printf("soak_check: flat: C heap %+.1f KiB, RSS %+.0f KiB, device memory unchanged over %lld steps\n",
                b.heap_kib - a.heap_kib, b.rss_kib - a.rss_kib, b.step - a.step);
  return failures ? 1 : 0;
}
