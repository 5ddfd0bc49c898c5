// Turning a failed Vulkan call into an rfa::Status that names the call, file and line.
#pragma once

#include "gpu/vk.hpp"

#include <string>

#include "rfa/status.hpp"

namespace rfa::gpu {

const char* vk_result_name(VkResult r);

// Device loss and out-of-memory get their own codes; everything else is a device_error.
Status vk_status(VkResult r, const char* expr, const char* file, int line);
// A failed wait for the device (a fence, the queue): device_lost whatever the VkResult (VK_TIMEOUT
// from a wait without a time limit, out of memory while waiting), so that an app has one recovery
// for a device that stopped answering: a new context (docs/cpp-api.md, "When the device fails").
Status vk_wait_status(VkResult r, const char* expr, const char* file, int line);

}  // namespace rfa::gpu

// Evaluate a VkResult expression; on failure return the Status from the enclosing function.
#define VK_TRY(expr)                                                              \
  do {                                                                            \
    VkResult vk_try_r_ = (expr);                                                  \
    if (vk_try_r_ != VK_SUCCESS)                                                  \
      return ::rfa::gpu::vk_status(vk_try_r_, #expr, __FILE__, __LINE__);         \
  } while (0)
