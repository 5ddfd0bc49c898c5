// rfa-bench stream --soak: a day of streaming. A long stream through a sliding window (10^6 steps
// through a 4096 window by default) that reports every --every steps (10^5) the host's memory (the
// resident set; the C heap's bytes in use and held from the system), the device memory (in use;
// held in blocks) and the drift of the outputs: the stream's last --tail outputs against a fresh
// session fed only the positions they can see (a band of W keys over L layers sees L (W - 1)
// positions back). docs/robustness.md gives a run's figures and what they say.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench.hpp"
#include "core/access.hpp"
#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "process_stats.hpp"
#include "stream_feeder.hpp"

namespace rfa::bench {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int fail(const Status& s) {
  std::fprintf(stderr, "rfa-bench stream --soak: %s\n", s.to_string().c_str());
  return 5;
}

// Batch row 0's last `reach` inputs and the stream's last `tail` outputs, in fixed rings: the
// soak allocates nothing per step of its own.
struct History {
  int reach = 0, tail = 0, d = 0, out_dim = 0;
  long long fed = 0;
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;
  std::vector<float> outs;
  History(int r, int t, int dim, int od, bool lm, bool timed)
      : reach(r), tail(t), d(dim), out_dim(od), ids(lm ? (size_t)r : 0), vals(lm ? 0 : (size_t)r * dim),
        ts(timed ? (size_t)r : 0), outs((size_t)t * od) {}
  void add(const std::vector<int64_t>& id, const std::vector<float>& v, const std::vector<double>& t,
           const std::vector<float>& out) {
    const size_t slot = (size_t)(fed % reach);
    if (!ids.empty()) ids[slot] = id[0];
    if (!vals.empty()) std::copy(v.begin(), v.begin() + d, vals.begin() + (long)slot * d);
    if (!ts.empty()) ts[slot] = t[0];
    std::copy(out.begin(), out.begin() + out_dim, outs.begin() + (long)(fed % tail) * out_dim);
    ++fed;
  }
  int kept() const { return (int)std::min<long long>(fed, reach); }
  // Position k (0 = the oldest kept) as the inputs of one call.
  void at(int k, std::vector<int64_t>* id, std::vector<float>* v, std::vector<double>* t) const {
    const size_t slot = (size_t)((fed - kept() + k) % reach);
    if (!ids.empty()) id->push_back(ids[slot]);
    if (!vals.empty()) v->insert(v->end(), vals.begin() + (long)slot * d, vals.begin() + (long)(slot + 1) * d);
    if (!ts.empty()) t->push_back(ts[slot]);
  }
  const float* output(int k) const {  // k-th of the last `tail` outputs, oldest first
    return &outs[(size_t)((fed - tail + k) % tail) * out_dim];
  }
};

struct Drift {
  double max_abs_diff = 0, scale = 0;
};

// The fresh session (reset, not made again: a checkpoint allocates nothing new) fed the kept
// positions but the last `tail` in one prefill, then those one step at a time, each output
// against the stream's.
Result<Drift> drift(Session& fresh, const History& h, bool lm) {
  fresh.reset();
  const int n = h.kept(), head = n - h.tail;
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;
  for (int k = 0; k < head; ++k) h.at(k, &ids, &vals, &ts);
  if (head > 0) RFA_TRY(lm ? fresh.prefill_tokens(ids, head, ts) : fresh.prefill_values(vals, head, ts));
  Drift d;
  for (int i = 0; i < h.tail; ++i) {
    ids.clear(), vals.clear(), ts.clear();
    h.at(head + i, &ids, &vals, &ts);
    RFA_TRY(lm ? fresh.step_tokens(ids, ts) : fresh.step_values(vals, ts));
    const float* want = h.output(i);
    for (int k = 0; k < h.out_dim; ++k) {
      d.max_abs_diff = std::max(d.max_abs_diff, std::fabs((double)want[k] - fresh.outputs()[(size_t)k]));
      d.scale = std::max(d.scale, std::fabs((double)fresh.outputs()[(size_t)k]));
    }
  }
  return d;
}

struct Memory {
  double rss = 0, heap_in_use = 0, heap_held = 0, device = 0, device_held = 0;
};
Memory memory(gpu::Allocator& al) {
  return {rss_mib(), heap_in_use_mib(), heap_held_mib(), al.used_bytes() / 1048576.0, al.reserved_bytes() / 1048576.0};
}

}  // namespace

int bench_soak(const std::vector<std::string>& args, Context& ctx, std::shared_ptr<const Model> model,
               const SessionOptions& so) {
  const bool json = has_flag(args, "--json");
  const long long steps = std::max(1LL, std::atoll(option(args, "--steps", "1000000").c_str()));
  const long long every = std::max(1LL, std::atoll(option(args, "--every", "100000").c_str()));
  // --tail 0: no drift checks (memory only).
  const int tail_arg = std::max(0, std::atoi(option(args, "--tail", "64").c_str()));
  const bool tail_check = tail_arg > 0;
  const int tail = std::max(1, tail_arg);
  if (so.window <= 0) {
    std::fprintf(stderr, "rfa-bench stream --soak needs --window W > 0\n");
    return 2;
  }
  const ModelInfo info = model_info(*model);
  const std::string device = ctx.device_info().name;
  gpu::Allocator& al = gpu_of(ctx).allocator();
  auto s = Session::create(ctx, model, so);
  if (!s) return fail(s.status());
  SessionOptions fo = so;
  fo.batch = 1;
  auto fresh = Session::create(ctx, model, fo);
  if (!fresh) return fail(fresh.status());
  Session& S = **s;
  Feeder feeder(info, so.batch);
  const bool lm = feeder.lm(), timed = !lm && info.input_dim == 2;
  // With a band of W keys per layer, an output sees at most L (W - 1) positions back.
  History hist(info.layers * (so.window - 1) + tail, tail, info.input_dim, info.output_dim, lm, timed);
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;
  Memory m0;
  Drift worst;
  const long long baseline_step =
      std::min<long long>(steps, std::max<long long>(1000, 2LL * S.max_context() + (long long)hist.reach));
  const double t0 = now_s();
  if (!json)
    std::printf("soak: %lld steps of %s through a %d window on %s; every %lld steps: host RSS (C heap in use / "
                "held), device memory (in use / held in blocks), and the last %d outputs against a fresh session\n",
                steps, info.name.c_str(), S.window(), device.c_str(), every, tail);
  for (long long i = 0; i < steps; ++i) {
    feeder.next(&ids, &vals, &ts);
    if (Status st = feeder.feed(S, ids, vals, ts); !st.ok()) return fail(st);
    hist.add(ids, vals, ts, S.outputs());
    if (i + 1 == baseline_step) {
      // The baseline: after the ring wrapped twice (every slot written: on a device whose memory
      // is the host's, such as lavapipe, the ring's pages become resident as it is first written,
      // which is growth of the resident set but not of anything allocated) and after a first
      // drift check at full length, so that the checker's own session has its buffers, plans and
      // touched pages too.
      if (tail_check)
        if (auto d = drift(**fresh, hist, lm); !d) return fail(d.status());
      m0 = memory(al);
    }
    if ((i + 1) % every != 0 && i + 1 != steps) continue;
    const Memory m = memory(al);  // before the drift check's own work
    const double seconds = now_s() - t0;
    auto d = tail_check ? drift(**fresh, hist, lm) : Result<Drift>(Drift{});
    if (!d) return fail(d.status());
    worst.max_abs_diff = std::max(worst.max_abs_diff, d->max_abs_diff);
    worst.scale = std::max(worst.scale, d->scale);
    if (json)
      std::printf("{\"bench\":\"stream\",\"mode\":\"soak_checkpoint\",\"steps\":%lld,\"seconds\":%.1f,\"rss_mib\":%.2f,"
                  "\"heap_in_use_mib\":%.3f,\"heap_held_mib\":%.3f,\"device_mib\":%.2f,\"device_held_mib\":%.1f,"
                  "\"max_abs_diff\":%.3g,\"output_scale\":%.3g}\n",
                  i + 1, seconds, m.rss, m.heap_in_use, m.heap_held, m.device, m.device_held, d->max_abs_diff, d->scale);
    else
      std::printf("  %8lld steps %8.1f s: RSS %.2f MiB (C heap %.3f / %.3f), device %.2f / %.1f MiB, drift %.3g "
                  "(outputs up to %.3g)\n",
                  i + 1, seconds, m.rss, m.heap_in_use, m.heap_held, m.device, m.device_held, d->max_abs_diff, d->scale);
    std::fflush(stdout);
  }
  const double total_s = now_s() - t0;
  const Memory m1 = memory(al);
  if (json)
    std::printf("{\"bench\":\"stream\",\"mode\":\"soak\",\"model\":\"%s\",\"batch\":%d,\"window\":%d,\"steps\":%lld,"
                "\"seconds\":%.1f,\"wall_ms\":%.4f,\"baseline_step\":%lld,\"rss_mib_start\":%.1f,\"rss_mib_end\":%.1f,\"heap_in_use_mib_start\":%.3f,"
                "\"heap_in_use_mib_end\":%.3f,\"device_mib_start\":%.1f,\"device_mib_end\":%.1f,\"max_abs_diff\":%.3g,"
                "\"output_scale\":%.3g,\"device\":\"%s\"}\n",
                info.name.c_str(), so.batch, S.window(), steps, total_s, total_s * 1000.0 / steps, baseline_step, m0.rss, m1.rss,
                m0.heap_in_use, m1.heap_in_use, m0.device, m1.device, worst.max_abs_diff, worst.scale, device.c_str());
  else
    std::printf("soak: %lld steps in %.1f s (%.3f ms per step); from step %lld to the end: host RSS %.1f -> %.1f MiB, "
                "C heap in use %.3f -> %.3f MiB, device memory %.1f -> %.1f MiB; worst drift of the last %d outputs vs a "
                "fresh session %.3g (outputs up to %.3g)\n",
                steps, total_s, total_s * 1000.0 / steps, baseline_step, m0.rss, m1.rss, m0.heap_in_use, m1.heap_in_use,
                m0.device, m1.device, tail, worst.max_abs_diff, worst.scale);
  return 0;
}

}  // namespace rfa::bench
