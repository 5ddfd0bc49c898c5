/* The RFA_* environment variables for C apps, read by the app: librfa never reads the environment.
 * Header-only (static inline), the C counterpart of rfa/environment.hpp, whose table lists the
 * variables and the option each sets.
 *
 *   rfa_context_options o;
 *   rfa_context_options_default(&o);
 *   rfa_context_options_from_environment(&o);   // RFA_DEVICE, RFA_VALIDATION, RFA_ATTN_*, ...
 *   rfa_context_create_ex(&o, &ctx);
 *
 * The strings it stores point into the environment (valid until the variable changes); set
 * fields are kept: device and device_profile when non-empty, validation when >= 0. */
#ifndef RFA_ENVIRONMENT_H
#define RFA_ENVIRONMENT_H

#include <stdlib.h>
#include <string.h>

#include "rfa/rfa.h"

static inline const char* rfa_environment_variable(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : NULL;
}

static inline void rfa_environment_on_off_(const char* name, int* field) {
  const char* v = rfa_environment_variable(name);
  if (v) *field = strcmp(v, "1") == 0 ? 1 : 0;
}

static inline void rfa_context_options_from_environment(rfa_context_options* o) {
  const char* v;
  if (!o) return;
  if ((!o->device || !*o->device) && (v = rfa_environment_variable("RFA_DEVICE"))) o->device = v;
  if (o->validation < 0) o->validation = (v = rfa_environment_variable("RFA_VALIDATION")) && strcmp(v, "0") != 0;
  if ((!o->device_profile || !*o->device_profile) && (v = rfa_environment_variable("RFA_DEVICE_PROFILE")))
    o->device_profile = v;
  if ((v = rfa_environment_variable("RFA_LINEAR_KERNEL"))) o->linear_kernel = v;
  rfa_environment_on_off_("RFA_ATTN_DIRECT_KV", &o->attention_direct_kv);
  rfa_environment_on_off_("RFA_ATTN_LAG_TABLE", &o->attention_lag_table);
  rfa_environment_on_off_("RFA_ATTN_TILE", &o->attention_tile);
  rfa_environment_on_off_("RFA_ATTN_F16_MATH", &o->attention_f16_math);
  if ((v = rfa_environment_variable("RFA_ATTN_SPLIT_K"))) {
    const int n = atoi(v);
    o->attention_split_k = n > 0 ? n : 0;
  }
  if ((v = rfa_environment_variable("RFA_ATTN_COOPMAT")))
    o->attention_coopmat = strcmp(v, "1") == 0 ? 1 : strcmp(v, "2") == 0 ? 2 : 0;
  if ((v = rfa_environment_variable("RFA_ATTN_TILE_WORKGROUP"))) {
    const int n = atoi(v);
    o->attention_tile_workgroup = n > 0 ? n : 0;
  }
  rfa_environment_on_off_("RFA_ATTN_FMA", &o->attention_fma);
  rfa_environment_on_off_("RFA_ATTN_Q_REGISTERS", &o->attention_q_registers);
  rfa_environment_on_off_("RFA_ATTN_PAD_STRIDES", &o->attention_pad_strides);
  rfa_environment_on_off_("RFA_ATTN_PREFETCH", &o->attention_prefetch);
  rfa_environment_on_off_("RFA_ATTN_RAW_F16", &o->attention_raw_f16);
  rfa_environment_on_off_("RFA_ATTN_LAG_E2", &o->attention_lag_e2);
  rfa_environment_on_off_("RFA_ATTN_DECODE_REGISTERS", &o->attention_decode_registers);
  rfa_environment_on_off_("RFA_ATTN_SPLIT_CORES", &o->attention_split_cores);
  rfa_environment_on_off_("RFA_ATTN_COOPMAT_PER_ELEMENT", &o->attention_coopmat_per_element);
  if ((v = rfa_environment_variable("RFA_ATTN_F16_CHUNK"))) {
    const int n = atoi(v);
    o->attention_f16_chunk = n > 0 ? n : 1;
  }
  if ((v = rfa_environment_variable("RFA_VERIFY_KERNELS"))) o->verify_kernels = strcmp(v, "0") != 0;
  if ((!o->kernel_cache || !*o->kernel_cache) && (v = rfa_environment_variable("RFA_KERNEL_CACHE"))) o->kernel_cache = v;
  if ((v = rfa_environment_variable("RFA_NO_PUSH_DESCRIPTORS"))) o->push_descriptors = strcmp(v, "0") == 0;
}

#endif /* RFA_ENVIRONMENT_H */
