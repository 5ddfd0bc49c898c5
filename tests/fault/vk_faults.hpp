// Fault injection over the Vulkan functions the runtime loads (issue 33), for tests only.
//
// librfa calls Vulkan through volk's function pointers (gpu/vk.hpp), filled once per process by
// gpu/vk_loader.cpp. install() loads them and puts a wrapper over each pointer that returns a
// VkResult; a wrapper counts its calls per call site (the function and the return address in the
// runtime that called it) and, when armed for that site, returns a chosen error instead of the
// driver's answer. None of this is compiled into librfa: a release build calls the loader's own
// pointers, with no branch per call; only a test process that calls install() pays for a counter.
//
// What an injected error does to the real device, so that the runtime's error paths meet what a
// driver would leave behind (and the validation layer, which sits below the wrappers, judges
// every call the runtime still makes):
//  - creation, allocation, mapping, submission: the call does not reach the driver (nothing is
//    created, mapped or submitted), as a failed call leaves it;
//  - vkEndCommandBuffer: the real call runs, then the error is returned (the command buffer is
//    "invalid" to the runtime, which must reset it before reuse);
//  - VK_ERROR_DEVICE_LOST: the device first finishes its work (vkDeviceWaitIdle / vkQueueWaitIdle
//    on the real device), then the loss is returned: after a loss nothing runs any more, and the
//    app may destroy every object (which the runtime then does);
//  - VK_TIMEOUT and out-of-memory from a wait: returned at once, the work still running, as a
//    wait that gave up leaves it.
#pragma once

#include "gpu/vk.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::test::faults {

// A wrapped function and the errors the Vulkan specification lets it return (of those a driver
// really returns: out of host / device memory, device loss, timeouts, pool exhaustion, a failed
// pipeline compile), which a sweep tries one by one.
struct Function {
  const char* name;
  std::vector<VkResult> errors;
};
const std::vector<Function>& functions();
int function_index(const std::string& name);  // -1 when not wrapped

// Loads the Vulkan loader's functions (once per process) and wraps them. Idempotent.
Status install();
bool installed();

// A call site: one wrapped function called from one place in the runtime.
struct Site {
  int function = -1;            // index into functions()
  const void* caller = nullptr;  // the return address of the call
  uint64_t calls = 0;           // calls since reset()
  uint64_t first = 0;           // the number of its first call among all wrapped calls since reset()
};
// Counting: reset() forgets the counts (sites stay known, with 0 calls) and disarms.
void reset();
uint64_t calls();            // wrapped calls since reset()
std::vector<Site> sites();   // sites called since reset(), in the order of their first call
// "vkCreateBuffer from rfa::gpu::Allocator::new_block memory.cpp:103" where the sanitizer's
// symbolizer is linked in, else the function and the caller's address.
std::string describe(const Site& s);

// Arming: the `occurrence`-th call (1 = the next) from `caller` of `function` returns `result`.
void arm(int function, const void* caller, uint64_t occurrence, VkResult result);
// ... or the `nth` call of `function` from anywhere, counted from now.
void arm_call(int function, uint64_t nth, VkResult result);
void disarm();
// Whether the armed fault was injected since it was armed, and where ("vkQueueSubmit -> VK_ERROR_DEVICE_LOST").
bool fired();
std::string fired_at();

// The status code a runtime call must report for `result` (gpu/vk_check.cpp's mapping).
Code expected_code(VkResult result);

}  // namespace rfa::test::faults
