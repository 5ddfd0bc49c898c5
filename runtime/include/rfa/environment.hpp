// The RFA_* environment variables, read by the app: librfa itself never reads the environment
// (devices, validation, device profiles and kernel variants reach it only through ContextOptions).
//
// Everything here is inline, so it runs in the program that calls it, not in the library. rfa-run,
// rfa-bench, rfa-make-model, rfa-viewer and the tests read their RFA_* variables through these
// functions, and an app that wants the same knobs calls them too:
//
//   auto ctx = rfa::Context::create(rfa::context_options_from_environment());
//
// | variable                 | field                                                          |
// |--------------------------|----------------------------------------------------------------|
// | RFA_DEVICE               | ContextOptions::device (index or name substring)               |
// | RFA_VALIDATION           | ContextOptions::validation (set, non-empty and not "0": on)    |
// | RFA_DEVICE_PROFILE       | ContextOptions::device_profile                                 |
// | RFA_LINEAR_KERNEL        | KernelOptions::linear ("tiled", "gemv", "direct")              |
// | RFA_ATTN_DIRECT_KV       | KernelOptions::attention_direct_kv ("1": 1, else 0)            |
// | RFA_ATTN_LAG_TABLE       | KernelOptions::attention_lag_table ("1": 1, else 0)            |
// | RFA_ATTN_SPLIT_K         | KernelOptions::attention_split_k (n >= 0)                      |
// | RFA_ATTN_TILE            | KernelOptions::attention_tile ("1": 1, else 0)                 |
// | RFA_ATTN_F16_MATH        | KernelOptions::attention_f16_math ("1": 1, else 0)             |
// | RFA_ATTN_COOPMAT         | KernelOptions::attention_coopmat ("1", "2", else 0)            |
// | RFA_ATTN_TILE_WORKGROUP  | KernelOptions::attention_tile_workgroup (n > 0 threads)        |
// | RFA_ATTN_FMA, RFA_ATTN_Q_REGISTERS, RFA_ATTN_PAD_STRIDES, RFA_ATTN_PREFETCH,              |
// | RFA_ATTN_RAW_F16, RFA_ATTN_LAG_E2, RFA_ATTN_DECODE_REGISTERS, RFA_ATTN_SPLIT_CORES,       |
// | RFA_ATTN_COOPMAT_PER_ELEMENT                                                             |
// |                          | the v3 switches of the same names ("1": 1, else 0)             |
// | RFA_ATTN_F16_CHUNK       | KernelOptions::attention_f16_chunk (n >= 1)                    |
// | RFA_VERIFY_KERNELS       | ContextOptions::verify_kernels (set and not "0": on)           |
// | RFA_KERNEL_CACHE         | ContextOptions::kernel_cache (a file)                          |
// | RFA_NO_PUSH_DESCRIPTORS  | KernelOptions::push_descriptors (set and not "0": false)       |
//
// A variable that is unset (or empty, for the kernel variables) leaves its field as it was.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>

#include "rfa/context.hpp"

namespace rfa {

// The value of environment variable `name`; "" when it is unset.
inline std::string environment_variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// A switch variable: on when set, non-empty and not "0" (RFA_VALIDATION=1).
inline bool environment_flag(const char* name) {
  const std::string v = environment_variable(name);
  return !v.empty() && v != "0";
}

// `k` with the kernel overrides the RFA_* variables name (the table above) applied on top.
inline KernelOptions kernel_options_from_environment(KernelOptions k) {
  const std::string linear = environment_variable("RFA_LINEAR_KERNEL");
  if (!linear.empty()) k.linear = linear;
  auto on_off = [](const char* name, int& field) {
    const std::string v = environment_variable(name);
    if (!v.empty()) field = v == "1" ? 1 : 0;
  };
  on_off("RFA_ATTN_DIRECT_KV", k.attention_direct_kv);
  on_off("RFA_ATTN_LAG_TABLE", k.attention_lag_table);
  on_off("RFA_ATTN_TILE", k.attention_tile);
  on_off("RFA_ATTN_F16_MATH", k.attention_f16_math);
  on_off("RFA_ATTN_FMA", k.attention_fma);
  on_off("RFA_ATTN_Q_REGISTERS", k.attention_q_registers);
  on_off("RFA_ATTN_PAD_STRIDES", k.attention_pad_strides);
  on_off("RFA_ATTN_PREFETCH", k.attention_prefetch);
  on_off("RFA_ATTN_RAW_F16", k.attention_raw_f16);
  on_off("RFA_ATTN_LAG_E2", k.attention_lag_e2);
  on_off("RFA_ATTN_DECODE_REGISTERS", k.attention_decode_registers);
  on_off("RFA_ATTN_SPLIT_CORES", k.attention_split_cores);
  on_off("RFA_ATTN_COOPMAT_PER_ELEMENT", k.attention_coopmat_per_element);
  auto count = [](const char* name, int& field, int least) {
    const std::string v = environment_variable(name);
    if (!v.empty()) field = std::max(least, std::atoi(v.c_str()));
  };
  count("RFA_ATTN_F16_CHUNK", k.attention_f16_chunk, 1);
  count("RFA_ATTN_SPLIT_K", k.attention_split_k, 0);
  count("RFA_ATTN_TILE_WORKGROUP", k.attention_tile_workgroup, 0);
  const std::string cm = environment_variable("RFA_ATTN_COOPMAT");
  if (!cm.empty()) k.attention_coopmat = cm == "1" ? 1 : cm == "2" ? 2 : 0;
  const std::string no_push = environment_variable("RFA_NO_PUSH_DESCRIPTORS");
  if (!no_push.empty()) k.push_descriptors = no_push == "0";
  return k;
}

// The overrides named by the RFA_* kernel variables (defaults where unset).
inline KernelOptions kernel_options_from_environment() { return kernel_options_from_environment(KernelOptions{}); }

// `o` completed from the environment: RFA_DEVICE where o.device is "", RFA_VALIDATION where
// o.validation is negative, RFA_DEVICE_PROFILE where o.device_profile is "", and the kernel
// variables on top of o.kernels. What a program's own flags (--device, --device-profile) set first wins.
inline ContextOptions context_options_from_environment(ContextOptions o = {}) {
  if (o.device.empty()) o.device = environment_variable("RFA_DEVICE");
  if (o.validation < 0) o.validation = environment_flag("RFA_VALIDATION") ? 1 : 0;
  if (o.device_profile.empty()) o.device_profile = environment_variable("RFA_DEVICE_PROFILE");
  if (environment_flag("RFA_VERIFY_KERNELS")) o.verify_kernels = true;
  if (o.kernel_cache.empty()) o.kernel_cache = environment_variable("RFA_KERNEL_CACHE");
  o.kernels = kernel_options_from_environment(o.kernels);
  return o;
}

}  // namespace rfa
