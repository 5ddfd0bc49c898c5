// The fault sweep's runner (issue 33): a scenario is set up without faults, its faulted part run
// once to count its Vulkan call sites, then run again from a fresh set-up once per (call site,
// error the call can return), with that call failing. Each run must end in a clean status that
// names the call and the error, or succeed with the unfaulted run's numbers; and leave the objects
// in the stated state (docs/cpp-api.md, "When the device fails"):
//  - any error but a loss: the same objects run the same work again once the fault is gone, with
//    the unfaulted numbers;
//  - device_lost: every call that needs the GPU returns device_lost until the app makes a new
//    context; a new context then runs the work with the unfaulted numbers.
// No Vulkan validation message may appear anywhere (the layer sits below the fault wrappers: it
// judges every call the runtime still makes after a failure), and leaks are left to LeakSanitizer
// in the sanitizer build (scripts/test.sh).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rfa/context.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/rfa.h"
#include "rfa/session.hpp"
#include "rfa/status.hpp"

namespace rfa::test::sweep {

// Everything a scenario builds: C++ objects, C handles, and what the run produced.
struct World {
  KernelOptions kernels;
  uint32_t max_storage_buffers_per_stage = 0;  // below the kernels' count: packed bindings
  std::unique_ptr<Context> ctx;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Session> session;
  std::unique_ptr<Heatmap> map;
  rfa_context* c_ctx = nullptr;
  rfa_model* c_model = nullptr;
  rfa_session* c_session = nullptr;
  // What the run produced, by position where a run may resume after a failure (stream steps).
  std::vector<std::vector<float>> by_position;
  std::vector<float> result;
  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World();
  // The numbers the run produced: by_position's entries in order, then result.
  std::vector<float> numbers() const;
  uint64_t c_validation_messages() const;  // of the C API's context (it prints them to stderr)
};

// Context options of a sweep's world: the test device, validation on (messages counted), the
// world's kernels and binding limit.
ContextOptions options(const World& w);
uint64_t validation_messages();  // seen by every world so far

struct Scenario {
  std::string name;
  std::function<Status(World&)> setup;  // never faulted
  std::function<Status(World&)> run;    // the faulted part; resumes where a failed run left off
  // After a failure other than a loss, with the fault gone: the app's retry (default: run).
  std::function<Status(World&)> again;
  // Unfaulted, after the faulted part (or its retry) succeeded: work that shows that what it made
  // works (a context made despite a failed optional call runs a session); its numbers count too.
  std::function<Status(World&)> verify;
  // After a device loss: calls that touch the GPU, each of which must return device_lost
  // (default: the C++ session's and context's; scenarios of the C API give their own).
  std::function<std::vector<Status>(World&)> refused;
  KernelOptions kernels;
  uint32_t max_storage_buffers_per_stage = 0;
};

struct Tally {
  std::string name;
  uint64_t calls = 0;          // Vulkan calls of the faulted part (unfaulted run)
  size_t sites = 0;            // distinct call sites among them
  size_t tried = 0;            // (site, error) runs
  size_t failed_cleanly = 0;   // ended in the expected status, then the stated state held
  size_t absorbed = 0;         // succeeded with the unfaulted numbers (the call's result was optional)
  size_t broken = 0;           // anything else (each is a failed CHECK with its story)
  double seconds = 0;
};

struct Limits {
  size_t max_sites = 0;         // 0: every site
  bool first_error_only = false;  // the first error of each site's list only (CI's subset)
};

// Runs the sweep of one scenario; every deviation is a failed doctest CHECK naming the site and
// the error. Prints one line per site when `verbose`.
Tally run(const Scenario& s, const Limits& limits, bool verbose);
void print(const std::vector<Tally>& tallies);

// The Code a runtime call reports for `result` from `function` (waits fail as losses).
Code expected_code(const std::string& function, VkResult result);

}  // namespace rfa::test::sweep
