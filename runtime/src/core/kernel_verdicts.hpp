// ContextOptions::verify_kernels: the attention kernel check (ops/attention_check.hpp) run when a
// context is created, its verdicts kept in the cache file the app names (ContextOptions::
// kernel_cache) per device, driver version and build of the kernels, and the paths that failed
// taken away from the device, so that the chooser never picks them.
#pragma once

#include <string>

#include "gpu/context.hpp"
#include "rfa/status.hpp"

namespace rfa::core {

// The cache key of the context's device: vendor and device id, driver version and name, the
// library's version, a hash of every compiled kernel, and the device profile.
std::string kernel_cache_key(const gpu::Context& g);

// Reads this device's verdicts from `cache_path` ("" none) or, where it holds none, runs the check
// and writes them there (other devices' lines kept; written whole to a temporary file, then
// renamed). Applies the refusals to g's capabilities and reports each through the context's
// message callback. Errors: the check could not run, or the cache cannot be written (named).
Status verify_kernels(gpu::Context& g, const std::string& cache_path);

}  // namespace rfa::core
