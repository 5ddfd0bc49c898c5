// The fault sweep (issue 33, tests/fault/sweep.hpp): every scenario's Vulkan call sites, each
// failed in turn with each error its function can return. RFA_FAULT_SWEEP picks how much:
//   full   every error of every site (docs/robustness.md gives the last figure);
//   ci     the first error of each site's list (the default; CI runs it in the sanitizer build,
//          leaks checked: tests/fault/CMakeLists.txt);
//   quick  the first error of each scenario's first 6 sites (the main build's suite).
// RFA_FAULT_SCENARIO=substring runs only the matching scenarios.
#include <doctest/doctest.h>

#include <cstdio>

#include "fault/scenarios.hpp"
#include "fault/vk_faults.hpp"
#include "rfa/environment.hpp"
#include "test_support.hpp"

using namespace rfa;
using namespace rfa::test;

TEST_CASE("every Vulkan call site of every scenario survives each error it can return") {
  REQUIRE(faults::install().ok());
  const std::string mode = environment_variable("RFA_FAULT_SWEEP");
  const bool full = mode == "full";
  const std::string only = environment_variable("RFA_FAULT_SCENARIO");
  sweep::Limits limits;
  limits.first_error_only = !full;
  if (mode == "quick") limits.max_sites = 6;
  std::vector<sweep::Tally> tallies;
  for (const sweep::Scenario& s : sweep::scenarios()) {
    if (!only.empty() && s.name.find(only) == std::string::npos) continue;
    std::printf("%s:\n", s.name.c_str());
    std::fflush(stdout);
    tallies.push_back(sweep::run(s, limits, true));
    const sweep::Tally& t = tallies.back();
    CHECK(t.broken == 0);
    CHECK(t.tried == t.failed_cleanly + t.absorbed + t.broken);
    if (s.name != "model load") CHECK(t.sites > 0);  // the scenario does reach the GPU
  }
  std::printf("%s sweep:\n", full ? "full" : mode == "quick" ? "quick (first error of 6 sites a scenario)"
                                                            : "CI (first error of each site)");
  sweep::print(tallies);
  CHECK(sweep::validation_messages() == 0);
}
