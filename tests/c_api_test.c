/* Exercises the C API from C: devices, context, a model written here (one RFA attention layer in
 * the reference format), a session with prefill and steps, outputs, probes and error reporting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <direct.h>
#define make_dir(d) _mkdir(d)
#else
#include <sys/stat.h>
#define make_dir(d) mkdir(d, 0755)
#endif

#include "rfa/environment.h"
#include "rfa/rfa.h"

/* 1: the validation layer on, as every suite runs; 0 where RFA_TEST_VALIDATION=off says the
 * platform has no layer (Wine), said on stderr so that it never passes unnoticed. */
static int test_validation(void) {
  const char* v = getenv("RFA_TEST_VALIDATION");
  if (v && strcmp(v, "off") == 0) {
    fprintf(stderr, "RFA_TEST_VALIDATION=off: running WITHOUT the Vulkan validation layer\n");
    return 0;
  }
  return 1;
}

/* Sets (or, with "", clears) an environment variable of this process. */
static int set_variable(const char* name, const char* value) {
#if defined(_WIN32)
  return _putenv_s(name, value);
#else
  return *value ? setenv(name, value, 1) : unsetenv(name);
#endif
}

static int failures = 0, checks = 0;
#define CHECK(cond)                                                     \
  do {                                                                  \
    ++checks;                                                           \
    if (!(cond)) {                                                      \
      ++failures;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n",     \
              __FILE__, __LINE__, #cond, rfa_last_error());             \
    }                                                                   \
  } while (0)

enum { H = 2, D = 4, DE = 6, DK = H * D };

typedef struct {
  const char* name;
  int rank, shape[5];
} Tensor;

static const Tensor kTensors[] = {
    {"sigma_v", 1, {H}},          {"sigma_tilde_v", 1, {H}},     {"eta_v", 1, {H}},
    {"gamma_v", 1, {H}},          {"tau_param", 1, {H}},         {"nu_param", 1, {H}},
    {"t_shift_param", 2, {1, H}}, {"P_prior_log", 5, {1, 1, H, 1, 1}}, {"P_scale_log", 5, {1, 1, H, 1, 1}},
    {"omega_v", 2, {H, D / 2}},   {"mu_v", 1, {H}},
    {"W_q.weight", 2, {2 * DK, DE}}, {"W_q.bias", 1, {2 * DK}},
    {"W_k.weight", 2, {2 * DK, DE}}, {"W_k.bias", 1, {2 * DK}},
    {"W_v.weight", 2, {2 * DK, DE}}, {"W_v.bias", 1, {2 * DK}},
    {"W_o.weight", 2, {DE, 2 * DK}}, {"W_o.bias", 1, {DE}},
};
enum { NT = sizeof(kTensors) / sizeof(kTensors[0]) };

static int numel(const Tensor* t) {
  int n = 1;
  for (int i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

/* Writes config.json and model.safetensors (8-byte header length, JSON header, f32 data). */
static int write_model(const char* dir) {
  char path[512], header[8192];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE* f = fopen(path, "wb");
  if (!f) return 0;
  fprintf(f, "{\"format\": \"rfa-reference\", \"architecture\": \"attention\", \"args\": {\"n_heads\": %d, \"d_e\": %d, "
             "\"d_k_total\": %d, \"d_v_total\": %d, \"seq_len\": 64, \"scale_decay_by_time_interval\": false, "
             "\"t_equal\": false}}\n",
          H, DE, DK, DK);
  fclose(f);
  size_t off = 0, len = 0;
  len += (size_t)snprintf(header + len, sizeof header - len, "{");
  for (int i = 0; i < NT; ++i) {
    const Tensor* t = &kTensors[i];
    size_t bytes = (size_t)numel(t) * 4;
    len += (size_t)snprintf(header + len, sizeof header - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", i ? "," : "", t->name);
    for (int r = 0; r < t->rank; ++r) len += (size_t)snprintf(header + len, sizeof header - len, "%s%d", r ? "," : "", t->shape[r]);
    len += (size_t)snprintf(header + len, sizeof header - len, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
    off += bytes;
  }
  len += (size_t)snprintf(header + len, sizeof header - len, "}");
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  f = fopen(path, "wb");
  if (!f) return 0;
  uint64_t hl = len;
  fwrite(&hl, 8, 1, f);
  fwrite(header, 1, len, f);
  unsigned seed = 12345;
  for (int i = 0; i < NT; ++i) {
    const Tensor* t = &kTensors[i];
    for (int k = 0; k < numel(t); ++k) {
      seed = seed * 1103515245u + 12345u;
      float v = ((float)((seed >> 8) & 0xffff) / 65535.0f - 0.5f);
      if (strcmp(t->name, "mu_v") == 0) v = 0.05f * (float)(k + 1);
      if (strcmp(t->name, "omega_v") == 0) v = 0.3f * (float)(k + 1);
      fwrite(&v, 4, 1, f);
    }
  }
  fclose(f);
  return 1;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "c_api_model";
  CHECK(strlen(rfa_version()) > 0);
  int n = 0;
  CHECK(rfa_device_count(&n) == RFA_OK && n > 0);
  const char *name = NULL, *type = NULL;
  CHECK(rfa_device_name(0, &name, &type) == RFA_OK && name && type);

  rfa_context* ctx = NULL;
  CHECK(rfa_context_create("no-such-device-xyz", test_validation(), &ctx) == RFA_ERROR_DEVICE);
  CHECK(ctx == NULL && strstr(rfa_last_error(), "no-such-device-xyz") != NULL);
  CHECK(rfa_context_create(NULL, test_validation(), &ctx) == RFA_OK && ctx);

  /* The options struct: defaults, the environment read by the app (rfa/environment.h), and a
   * library that reads no variable itself. */
  {
    rfa_context_options o;
    memset(&o, 0x5a, sizeof o);
    rfa_context_options_default(&o);
    CHECK(o.device == NULL && o.device_profile == NULL && o.linear_kernel == NULL);
    CHECK(o.validation == -1 && o.memory_budget == 0 && o.timestamps == 1 && o.push_descriptors == 1);
    CHECK(o.attention_direct_kv == -1 && o.attention_lag_table == -1 && o.attention_split_k == -1);
    CHECK(o.attention_tile == -1 && o.attention_f16_math == -1 && o.attention_coopmat == -1);
    o.device = "no-such-device-xyz";
    rfa_context* other = NULL;
    CHECK(rfa_context_create_ex(&o, &other) == RFA_ERROR_DEVICE && other == NULL);
    CHECK(strstr(rfa_last_error(), "no-such-device-xyz") != NULL);
    o.device = NULL;
    o.device_profile = "no-such-profile";
    CHECK(rfa_context_create_ex(&o, &other) == RFA_ERROR_INVALID_ARGUMENT && other == NULL);
    CHECK(strstr(rfa_last_error(), "no-such-profile") != NULL);
    o.device_profile = NULL;
    CHECK(rfa_context_create_ex(NULL, &other) == RFA_OK && other);
    rfa_context_destroy(other);
    other = NULL;
    /* RFA_DEVICE names no device: rfa_context_create ignores it, the app's helper passes it on. */
    CHECK(set_variable("RFA_DEVICE", "no-such-device-in-the-environment") == 0);
    CHECK(rfa_context_create(NULL, test_validation(), &other) == RFA_OK && other);
    rfa_context_destroy(other);
    other = NULL;
    rfa_context_options_default(&o);
    o.validation = test_validation();
    rfa_context_options_from_environment(&o);
    CHECK(o.device && strcmp(o.device, "no-such-device-in-the-environment") == 0);
    CHECK(rfa_context_create_ex(&o, &other) == RFA_ERROR_DEVICE && other == NULL);
    CHECK(set_variable("RFA_DEVICE", "") == 0);
    CHECK(set_variable("RFA_ATTN_SPLIT_K", "3") == 0 && set_variable("RFA_LINEAR_KERNEL", "gemv") == 0);
    rfa_context_options_default(&o);
    rfa_context_options_from_environment(&o);
    CHECK(o.device == NULL && o.attention_split_k == 3 && o.linear_kernel && strcmp(o.linear_kernel, "gemv") == 0);
    CHECK(set_variable("RFA_ATTN_SPLIT_K", "") == 0 && set_variable("RFA_LINEAR_KERNEL", "") == 0);
    /* The lowered limits reach the device's view: 4 storage buffers per stage packs the kernels'
     * bindings, as on the Android baseline; the storage-buffer range is lowered too. */
    rfa_context_options_default(&o);
    CHECK(o.capture_pipeline_statistics == 0 && o.max_storage_buffer_range == 0 && o.max_storage_buffers_per_stage == 0);
    o.validation = test_validation();
    o.max_storage_buffers_per_stage = 4;
    o.max_storage_buffer_range = 64u << 20;
    o.capture_pipeline_statistics = 1;
    CHECK(rfa_context_create_ex(&o, &other) == RFA_OK && other);
    const char* caps = other ? rfa_context_capabilities(other) : NULL;
    CHECK(caps && strstr(caps, "storage buffers: 4 per stage") != NULL);
    CHECK(caps && strstr(caps, "range 67108864 bytes") != NULL);
    CHECK(caps && strstr(caps, "bindings: packed") != NULL);
    rfa_context_destroy(other);
    other = NULL;
    CHECK(rfa_context_capabilities(NULL) == NULL && strstr(rfa_last_error(), "ctx is NULL") != NULL);
  }

  rfa_model* model = NULL;
  CHECK(rfa_model_load("/nonexistent/model/dir", &model) != RFA_OK && model == NULL);
  CHECK(write_model(dir));
  CHECK(rfa_model_load(dir, &model) == RFA_OK);
  if (!model) {
    rfa_context_destroy(ctx);
    fprintf(stderr, "%d of %d checks failed\n", failures, checks);
    return 1;
  }
  int layers = 0, heads = 0, hd = 0, in_dim = 0, out_dim = 0, vocab = -1;
  CHECK(rfa_model_info(model, &layers, &heads, &hd, &in_dim, &out_dim, &vocab) == RFA_OK);
  CHECK(layers == 1 && heads == H && hd == D && in_dim == DE && out_dim == DE && vocab == 0);
  int trained_window = -1;
  CHECK(rfa_model_attention_window(model, &trained_window) == RFA_OK && trained_window == 0);
  CHECK(rfa_model_attention_window(model, NULL) == RFA_ERROR_INVALID_ARGUMENT);

  rfa_head_info hi;
  CHECK(rfa_model_head(model, 0, 1, &hi) == RFA_OK);
  CHECK(fabs(hi.mu - 0.1) < 1e-6);      /* mu_v = 0.05 (k + 1) with decay scaling off */
  CHECK(hi.kappa > 1.0 && hi.tau > 0.0 && hi.regime >= 0 && hi.regime <= 2);
  CHECK(rfa_model_head(model, 1, 0, &hi) == RFA_ERROR_INVALID_ARGUMENT);

  rfa_session* s = NULL;
  CHECK(rfa_session_create(ctx, model, 1, 16, &s) == RFA_OK && s);
  float x[8 * DE];
  for (int i = 0; i < 8 * DE; ++i) x[i] = (float)sin(0.37 * i);
  /* prefill 8 positions, then the same 8 one step at a time: outputs must agree */
  CHECK(rfa_session_prefill_values(s, x, 8, NULL) == RFA_OK);
  float prefill[8 * DE], step[DE];
  int count = 0;
  size_t floats = 0;
  CHECK(rfa_session_outputs(s, prefill, 8 * DE, &count, &floats) == RFA_OK && count == 8 && floats == 8 * DE);
  /* The CPU twin, from librfa_reference (linked for this test), agrees with the GPU prefill; its
   * errors reach rfa_last_error through rfa_set_last_error, librfa's per-thread message. */
  {
    double xd[8 * DE], twin[8 * DE], worst = 0;
    for (int i = 0; i < 8 * DE; ++i) xd[i] = x[i];
    CHECK(rfa_model_reference_forward(model, 1, 8, xd, NULL, NULL, twin) == RFA_OK);
    for (int i = 0; i < 8 * DE; ++i) worst = fmax(worst, fabs(twin[i] - (double)prefill[i]));
    CHECK(worst < 1e-3);
    CHECK(rfa_model_reference_forward(model, 1, 8, NULL, NULL, NULL, twin) == RFA_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(rfa_last_error(), "takes values") != NULL);
    CHECK(rfa_model_reference_forward(NULL, 1, 8, xd, NULL, NULL, twin) == RFA_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(rfa_last_error(), "NULL") != NULL);
    CHECK(rfa_set_last_error(RFA_ERROR_IO, "io_error: set by an extension") == RFA_ERROR_IO);
    CHECK(strcmp(rfa_last_error(), "io_error: set by an extension") == 0);
  }
  float probe[8 * 8];
  CHECK(rfa_session_attention(s, 0, 1, 0, 0, 8, 0, 8, 0, probe) == RFA_OK);
  for (int r = 0; r < 8; ++r) {
    double sum = 0;
    for (int c = 0; c < 8; ++c) sum += probe[r * 8 + c];
    CHECK(fabs(sum - 1.0) < 1e-4);        /* rows of Ahat sum to 1 */
    CHECK(r == 7 || probe[r * 8 + 7] == 0); /* causal */
  }
  double lags[3] = {0.0, 1.0, 5.0}, dec[3], vc[3];
  CHECK(rfa_session_curves(s, 0, 1, lags, 3, dec, vc, NULL, NULL) == RFA_OK);
  CHECK(dec[0] > dec[1] && dec[1] > dec[2] && dec[2] > 0);  /* mu > 0: decay falls with lag */
  CHECK(fabs(dec[1] / dec[0] - exp(-0.1)) < 1e-4);          /* E(lag) = exp(-mu (lag + s)) */
  CHECK(rfa_session_reset(s) == RFA_OK && rfa_session_position(s) == 0);
  double max_diff = 0;
  for (int i = 0; i < 8; ++i) {
    double t = (double)i;
    CHECK(rfa_session_prefill_values(s, x + i * DE, 1, &t) == RFA_OK);
    CHECK(rfa_session_outputs(s, step, DE, &count, &floats) == RFA_OK && count == 1);
    for (int k = 0; k < DE; ++k) {
      double d = fabs(step[k] - prefill[i * DE + k]);
      if (d > max_diff) max_diff = d;
    }
  }
  CHECK(max_diff < 1e-4);
  /* decreasing timestamps are an input error */
  double back = 3.0;
  CHECK(rfa_session_prefill_values(s, x, 1, &back) == RFA_ERROR_INPUT);
  CHECK(strstr(rfa_last_error(), "timestamps") != NULL);
  /* context overflow */
  CHECK(rfa_session_prefill_values(s, x, 8, NULL) == RFA_OK);
  CHECK(rfa_session_prefill_values(s, x, 8, NULL) == RFA_ERROR_INPUT);

  rfa_session_destroy(s);

  /* A sliding window of 3: a stream of 40 positions through a session whose max_context is 16. */
  rfa_session_options so;
  rfa_session_options_default(&so);
  CHECK(so.batch == 1 && so.window == 0 && so.max_context > 0 && so.kv == RFA_KV_F32);
  so.kv = 7; /* neither RFA_KV_F32 nor RFA_KV_F16: refused */
  CHECK(rfa_session_create_ex(ctx, model, &so, &s) == RFA_ERROR_INVALID_ARGUMENT && !s);
  so.kv = RFA_KV_F16; /* the window test below runs on fp16 K/V caches */
  so.window = 3;
  so.max_context = 16;
  CHECK(rfa_session_create_ex(ctx, model, &so, &s) == RFA_OK && s);
  for (int i = 0; i < 40; ++i) CHECK(rfa_session_prefill_values(s, x + (i % 8) * DE, 1, NULL) == RFA_OK);
  CHECK(rfa_session_position(s) == 40 && rfa_session_oldest_position(s) > 0);
  rfa_window_truncation wt[8];
  int nw = 0;
  CHECK(rfa_session_window_report(s, 0, 1, wt, 8, &nw) == RFA_OK && nw == H);
  CHECK(fabs(wt[1].edge_lag - 3.0) < 1e-9);                 /* t = positions: the newest evicted key is 3 back */
  CHECK(rfa_model_head(model, 0, 1, &hi) == RFA_OK);
  CHECK(fabs(wt[1].decay_bound - exp(-hi.mu * (3.0 + hi.lag_shift))) < 1e-6);  /* E = exp(-mu (lag + s)) */
  CHECK(wt[1].edge_mass >= 0.0 && wt[1].edge_mass <= 1.0);
  CHECK(rfa_session_window_report(s, 0, 0, wt, 1, &nw) == RFA_ERROR_INVALID_ARGUMENT);  /* capacity too small */
  rfa_session_stats st;
  CHECK(rfa_session_get_stats(s, &st) == RFA_OK && st.submits >= 40 && st.plans_recorded >= 1);
  float probe1;
  CHECK(rfa_session_attention(s, 0, 1, 0, 0, 1, 0, 1, 0, &probe1) == RFA_ERROR_INVALID_ARGUMENT);  /* evicted */
  /* RFA_CACHED: what is still cached. The ring of a window of 3 holds 3 + 3 - 1 = 5 positions. */
  CHECK(rfa_session_window(s) == 3 && rfa_session_max_context(s) == 5);
  {
    const int lo = rfa_session_oldest_position(s), hi = rfa_session_position(s), n = hi - lo;
    CHECK(lo == 35 && rfa_session_first_full_row(s) == lo + 2);
    float cached[25], explicit_[25];
    CHECK(rfa_session_attention(s, 0, 1, 0, RFA_CACHED, RFA_CACHED, RFA_CACHED, RFA_CACHED, 1, cached) == RFA_OK);
    CHECK(rfa_session_attention(s, 0, 1, 0, lo, hi, lo, hi, 1, explicit_) == RFA_OK);
    CHECK(n == 5 && memcmp(cached, explicit_, sizeof cached) == 0);
    rfa_row_diagnostics rows[5], row_last;
    CHECK(rfa_session_row_diagnostics(s, 0, 1, 0, RFA_CACHED, RFA_CACHED, NULL, rows) == RFA_OK);
    CHECK(rfa_session_row_diagnostics(s, 0, 1, 0, hi - 1, hi, NULL, &row_last) == RFA_OK);
    CHECK(rows[hi - 1 - (lo + 2)].entropy == row_last.entropy);  /* rows [first_full_row, position) */
    CHECK(rfa_session_row_diagnostics(s, 0, 1, 0, lo, hi, NULL, rows) == RFA_ERROR_INVALID_ARGUMENT);
  }
  rfa_session_destroy(s);
  /* window -1: no window (the model's own, none here, would be 0); below -1 is refused. */
  so.window = -1;
  CHECK(rfa_session_create_ex(ctx, model, &so, &s) == RFA_OK && s);
  CHECK(rfa_session_window(s) == 0 && rfa_session_max_context(s) == 16);
  rfa_session_destroy(s);
  so.window = -2;
  CHECK(rfa_session_create_ex(ctx, model, &so, &s) == RFA_ERROR_INVALID_ARGUMENT && !s);
  CHECK(strstr(rfa_last_error(), "window") != NULL);
  rfa_model_destroy(model);
  CHECK(rfa_context_validation_messages(ctx) == 0);
  rfa_context_destroy(ctx);
  rfa_session_destroy(NULL);
  rfa_model_destroy(NULL);
  rfa_context_destroy(NULL);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
