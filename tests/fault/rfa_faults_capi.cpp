// rfa_faults.h over vk_faults.hpp: what the C API's test and Python's reach through librfa_faults.
#include "fault/rfa_faults.h"

#include <string>
#include <vector>

#include "fault/vk_faults.hpp"
#include "gpu/vk_check.hpp"
#include "rfa/rfa.h"

namespace {
namespace faults = rfa::test::faults;
std::vector<faults::Site> g_snapshot;  // the sites of the last rfa_faults_snapshot()
std::string g_description;

int out_of_range(size_t i) {
  return (int)rfa_set_last_error(RFA_ERROR_INVALID_ARGUMENT,
                                 ("fault site " + std::to_string(i) + " is not in the snapshot of " +
                                  std::to_string(g_snapshot.size()))
                                     .c_str());
}
}  // namespace

extern "C" {

int rfa_faults_install(void) {
  rfa::Status s = faults::install();
  return s.ok() ? 0 : (int)rfa_set_last_error((rfa_status)s.code(), s.message().c_str());
}

void rfa_faults_reset(void) { faults::reset(); }
uint64_t rfa_faults_calls(void) { return faults::calls(); }

size_t rfa_faults_snapshot(void) {
  g_snapshot = faults::sites();
  return g_snapshot.size();
}

int rfa_faults_site(size_t i, const char** function, uint64_t* calls, int32_t* errors, size_t capacity, size_t* n_errors) {
  if (i >= g_snapshot.size()) return out_of_range(i);
  const faults::Function& f = faults::functions()[(size_t)g_snapshot[i].function];
  if (function) *function = f.name;
  if (calls) *calls = g_snapshot[i].calls;
  if (n_errors) *n_errors = f.errors.size();
  for (size_t k = 0; errors && k < f.errors.size() && k < capacity; ++k) errors[k] = (int32_t)f.errors[k];
  return 0;
}

const char* rfa_faults_site_description(size_t i) {
  g_description = i < g_snapshot.size() ? faults::describe(g_snapshot[i]) : "";
  return g_description.c_str();
}

int rfa_faults_arm_site(size_t i, uint64_t occurrence, int32_t result) {
  if (i >= g_snapshot.size()) return out_of_range(i);
  faults::arm(g_snapshot[i].function, g_snapshot[i].caller, occurrence, (VkResult)result);
  return 0;
}

int rfa_faults_arm_call(const char* function, uint64_t nth, int32_t result) {
  const int f = function ? faults::function_index(function) : -1;
  if (f < 0)
    return (int)rfa_set_last_error(RFA_ERROR_INVALID_ARGUMENT,
                                   (std::string("no wrapped Vulkan function named ") + (function ? function : "NULL")).c_str());
  faults::arm_call(f, nth, (VkResult)result);
  return 0;
}

void rfa_faults_disarm(void) { faults::disarm(); }
int rfa_faults_fired(void) { return faults::fired() ? 1 : 0; }
const char* rfa_faults_result_name(int32_t result) { return rfa::gpu::vk_result_name((VkResult)result); }
int rfa_faults_expected_status(int32_t result) { return (int)faults::expected_code((VkResult)result); }

}  // extern "C"
