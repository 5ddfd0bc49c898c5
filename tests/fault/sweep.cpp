#include "fault/sweep.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "fault/vk_faults.hpp"
#include "gpu/vk_check.hpp"
#include "rfa/environment.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

namespace rfa::test::sweep {
namespace {

std::atomic<uint64_t> g_messages{0};

struct Outcome {
  bool absorbed = false, clean = false;
};

bool same(const std::vector<float>& got, const std::vector<float>& want, const std::string& story) {
  if (got.size() != want.size()) {
    FAIL_CHECK(story << ": " << got.size() << " numbers, the unfaulted run gave " << want.size());
    return false;
  }
  // The same work on the same device: the same bits (a fault may only change whether work ran).
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      FAIL_CHECK(story << ": number " << i << " is " << got[i] << ", the unfaulted run gave " << want[i]);
      return false;
    }
  return true;
}

std::vector<Status> default_refused(World& w) {
  std::vector<Status> out;
  if (w.session) {
    const ModelInfo info = model_info(w.session->model());
    const int B = w.session->batch();
    out.push_back(info.architecture == "lm" ? w.session->step_tokens(std::vector<int64_t>((size_t)B, 1))
                                            : w.session->step_values(std::vector<float>((size_t)B * info.input_dim, 0.f)));
    if (w.session->position() > 0)
      out.push_back(Inspector(*w.session).attention(0, 0, 0, Inspector::kCached, Inspector::kCached,
                                                    Inspector::kCached, Inspector::kCached, false)
                        .status());
  }
  if (w.ctx && w.model) out.push_back(Session::create(*w.ctx, w.model).status());
  if (w.ctx) out.push_back(Heatmap::create(*w.ctx, 8, 8).status());
  return out;
}

Status verify(const Scenario& sc, World& w) { return sc.verify ? sc.verify(w) : Status::Ok(); }

Outcome one(const Scenario& sc, const faults::Site& site, VkResult err, const std::vector<float>& ref,
            const std::string& story) {
  Outcome o;
  const std::string fn = faults::functions()[(size_t)site.function].name;
  const uint64_t messages = g_messages.load();
  bool broken = false;
  auto fail = [&](const std::string& why) {
    FAIL_CHECK(story << ": " << why);
    broken = true;
  };
  Status st;
  {
    World w;
    w.kernels = sc.kernels;
    w.max_storage_buffers_per_stage = sc.max_storage_buffers_per_stage;
    Status s = sc.setup(w);
    if (!s.ok()) {
      fail("set-up failed: " + s.to_string());
      return o;
    }
    faults::reset();
    faults::arm(site.function, site.caller, 1, err);
    st = sc.run(w);
    const bool fired = faults::fired();
    faults::disarm();
    if (!fired) fail("the armed call was not reached (the scenario's calls differ between runs)");
    if (st.ok()) {
      if (Status v = verify(sc, w); !v.ok()) fail("the objects made despite the fault do not work: " + v.to_string());
      o.absorbed = same(w.numbers(), ref, story + " (absorbed)");
      broken = broken || !o.absorbed;
    } else {
      const Code want = expected_code(fn, err);
      if (st.code() != want)
        fail(std::string("status ") + code_name(st.code()) + ", expected " + code_name(want) + ": " + st.message());
      if (st.message().find(fn) == std::string::npos) fail("the message does not name " + fn + ": " + st.message());
      if (st.message().find(gpu::vk_result_name(err)) == std::string::npos)
        fail(std::string("the message does not name ") + gpu::vk_result_name(err) + ": " + st.message());
      if (st.code() == Code::device_lost) {
        if (w.ctx && !w.ctx->lost()) fail("the context does not say it is lost");
        const auto refused = sc.refused ? sc.refused(w) : default_refused(w);
        for (const Status& r : refused)
          if (r.code() != Code::device_lost) fail("after the loss a call returned " + r.to_string());
      } else {
        Status a = (sc.again ? sc.again : sc.run)(w);
        if (a.ok()) a = verify(sc, w);
        if (!a.ok()) fail("the same objects do not run again once the fault is gone: " + a.to_string());
        else if (!same(w.numbers(), ref, story + " (run again)")) broken = true;
      }
    }
    if (w.c_validation_messages()) fail("the C API's context saw Vulkan validation messages");
  }
  if (st.code() == Code::device_lost) {
    // The app's recovery: a new context (and everything on it) runs the work again.
    World w;
    w.kernels = sc.kernels;
    w.max_storage_buffers_per_stage = sc.max_storage_buffers_per_stage;
    Status s = sc.setup(w);
    if (s.ok()) s = sc.run(w);
    if (s.ok()) s = verify(sc, w);
    if (!s.ok()) fail("a new context after the loss fails: " + s.to_string());
    else if (!same(w.numbers(), ref, story + " (new context)")) broken = true;
  }
  if (g_messages.load() != messages) fail("Vulkan validation messages were reported");
  o.clean = !broken && !st.ok();
  if (broken) o.absorbed = false;
  return o;
}

}  // namespace

World::~World() {
  map.reset();
  session.reset();
  rfa_session_destroy(c_session);
  rfa_model_destroy(c_model);
  rfa_context_destroy(c_ctx);
  ctx.reset();
}

std::vector<float> World::numbers() const {
  std::vector<float> out;
  for (const auto& p : by_position) out.insert(out.end(), p.begin(), p.end());
  out.insert(out.end(), result.begin(), result.end());
  return out;
}

uint64_t World::c_validation_messages() const { return c_ctx ? rfa_context_validation_messages(c_ctx) : 0; }

ContextOptions options(const World& w) {
  ContextOptions o = context_options_from_environment();
  o.validation = validation_option();
  o.kernels = w.kernels;
  o.max_storage_buffers_per_stage = w.max_storage_buffers_per_stage;
  o.on_message = [](MessageSeverity sev, const char* msg) {
    if (sev < MessageSeverity::warning) return;
    g_messages.fetch_add(1);
    std::fprintf(stderr, "Vulkan validation message: %s\n", msg);
  };
  return o;
}

uint64_t validation_messages() { return g_messages.load(); }

Code expected_code(const std::string& function, VkResult result) {
  // Waits without a time limit that fail leave the work's state unknown: a loss (vk_wait_status).
  if (function == "vkWaitForFences" || function == "vkGetFenceStatus") return Code::device_lost;
  return faults::expected_code(result);
}

Tally run(const Scenario& sc, const Limits& limits, bool verbose) {
  Tally t;
  t.name = sc.name;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> ref;
  std::vector<faults::Site> sites;
  {
    World w;
    w.kernels = sc.kernels;
    w.max_storage_buffers_per_stage = sc.max_storage_buffers_per_stage;
    Status s = sc.setup(w);
    REQUIRE_MESSAGE(s.ok(), sc.name << " set-up: " << s.to_string());
    faults::reset();
    s = sc.run(w);
    t.calls = faults::calls();
    sites = faults::sites();
    REQUIRE_MESSAGE(s.ok(), sc.name << " without faults: " << s.to_string());
    s = verify(sc, w);
    REQUIRE_MESSAGE(s.ok(), sc.name << " without faults, verifying: " << s.to_string());
    ref = w.numbers();
  }
  if (limits.max_sites && sites.size() > limits.max_sites) sites.resize(limits.max_sites);
  t.sites = sites.size();
  for (const faults::Site& site : sites) {
    std::vector<VkResult> errors = faults::functions()[(size_t)site.function].errors;
    if (limits.first_error_only && errors.size() > 1) errors.erase(errors.begin() + 1, errors.end());
    std::string line;
    for (VkResult err : errors) {
      const std::string story = sc.name + ": " + faults::describe(site) + " -> " + gpu::vk_result_name(err);
      const Outcome o = one(sc, site, err, ref, story);
      ++t.tried;
      if (o.clean) ++t.failed_cleanly;
      else if (o.absorbed) ++t.absorbed;
      else ++t.broken;
      line += std::string(" ") + gpu::vk_result_name(err) + (o.clean ? ":failed" : o.absorbed ? ":absorbed" : ":BROKEN");
    }
    if (verbose) std::printf("  %s:%s\n", faults::describe(site).c_str(), line.empty() ? " (no error to try)" : line.c_str());
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

void print(const std::vector<Tally>& tallies) {
  size_t sites = 0, tried = 0, clean = 0, absorbed = 0, broken = 0;
  std::printf("fault sweep (%s):\n", rfa::test::validation_enabled() ? "validation on" : "validation off");
  std::printf("  %-28s %7s %6s %6s %8s %9s %7s %8s\n", "scenario", "calls", "sites", "tried", "failed", "absorbed",
              "broken", "seconds");
  for (const Tally& t : tallies) {
    std::printf("  %-28s %7llu %6zu %6zu %8zu %9zu %7zu %8.1f\n", t.name.c_str(), (unsigned long long)t.calls, t.sites,
                t.tried, t.failed_cleanly, t.absorbed, t.broken, t.seconds);
    sites += t.sites, tried += t.tried, clean += t.failed_cleanly, absorbed += t.absorbed, broken += t.broken;
  }
  std::printf("  total: %zu call sites, %zu (site, error) runs: %zu failed cleanly, %zu absorbed, %zu broken\n", sites,
              tried, clean, absorbed, broken);
}

}  // namespace rfa::test::sweep
