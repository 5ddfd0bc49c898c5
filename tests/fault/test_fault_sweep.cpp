// The fault sweep (issue 33, tests/fault/sweep.hpp): every scenario's Vulkan call sites, each
// failed in turn with each error its function can return. RFA_FAULT_SWEEP=full tries every error
// of every site (docs/testing.md gives the last figure); the default, CI's subset, tries the first
// error of each site's list. RFA_FAULT_SCENARIO=substring runs only matching scenarios.
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
  const bool full = environment_variable("RFA_FAULT_SWEEP") == "full";
  const std::string only = environment_variable("RFA_FAULT_SCENARIO");
  sweep::Limits limits;
  limits.first_error_only = !full;
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
  std::printf("%s sweep:\n", full ? "full" : "CI (first error of each site)");
  sweep::print(tallies);
  CHECK(sweep::validation_messages() == 0);
}
