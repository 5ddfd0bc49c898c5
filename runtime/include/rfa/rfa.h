/* RFA-VK C API: embed the runtime from C (or any language with a C FFI).
 * Every call returns an rfa_status; on failure rfa_last_error() gives the message (per thread).
 * Handles are opaque; each _destroy accepts NULL. */
#ifndef RFA_H
#define RFA_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "rfa/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rfa_status {
  RFA_OK = 0,
  RFA_ERROR_INVALID_ARGUMENT = 1,
  RFA_ERROR_MODEL = 2,
  RFA_ERROR_INPUT = 3,
  RFA_ERROR_DEVICE = 4,
  RFA_ERROR_OUT_OF_MEMORY = 5,
  RFA_ERROR_DEVICE_LOST = 6,
  RFA_ERROR_IO = 7,
  RFA_ERROR_UNSUPPORTED = 8
} rfa_status;

typedef struct rfa_context rfa_context;
typedef struct rfa_model rfa_model;
typedef struct rfa_session rfa_session;

RFA_API const char* rfa_version(void);
/* The message of the last failed call on this thread ("" if none). */
RFA_API const char* rfa_last_error(void);
RFA_API const char* rfa_status_name(rfa_status s);
/* Records `message` as this thread's rfa_last_error() and returns `status`: for libraries that
 * extend the C API (librfa_reference's rfa_model_reference_forward) and for language bindings. */
RFA_API rfa_status rfa_set_last_error(rfa_status status, const char* message);

/* Devices: count, then the name/type of device i (pointers stay valid until the next call). */
RFA_API rfa_status rfa_device_count(int* count);
RFA_API rfa_status rfa_device_name(int index, const char** name, const char** type);

/* device: NULL or "" for the best device, else an index or a name substring.
 * validation: 1 on; 0 or -1 off. The library reads no environment variable (RFA_DEVICE,
 * RFA_VALIDATION, RFA_ATTN_*, ...): an app that wants them reads them itself, e.g. with
 * rfa_context_options_from_environment (rfa/environment.h), and calls rfa_context_create_ex. */
RFA_API rfa_status rfa_context_create(const char* device, int validation, rfa_context** out);
/* Adopts an app's Vulkan objects; the runtime never destroys them. */
RFA_API rfa_status rfa_context_adopt(VkInstance instance, VkPhysicalDevice physical_device, VkDevice device, VkQueue queue,
                             uint32_t queue_family, rfa_context** out);
/* Every context option (rfa::ContextOptions). Start from rfa_context_options_default(): device
 * NULL (the best), validation -1 (off; 1 on), no device profile, memory_budget 0 (90% of the device-local
 * heaps), timestamps 1, and every kernel choice the device's own (linear_kernel NULL, the
 * attention_* fields -1, push_descriptors 1). linear_kernel: "tiled", "gemv" or "direct";
 * attention_direct_kv, _lag_table, _tile, _f16_math: 0 or 1; attention_split_k: n ways;
 * attention_coopmat: 0, 1 or 2 (rfa/context.hpp's KernelOptions). capture_pipeline_statistics 0
 * (1: ask the driver for per-pipeline statistics); max_storage_buffer_range and
 * max_storage_buffers_per_stage 0 (the device's; a lower value lowers that limit, as
 * rfa::ContextOptions does: below what a kernel binds, bindings are packed). attention_tile_workgroup
 * and the kernels-v3 switches attention_fma ... attention_split_cores: -1 (the device's choice),
 * 0 or 1 (attention_f16_chunk: n >= 1), as rfa::KernelOptions. verify_kernels 0 (1: check every
 * attention path at creation and never choose a failed one); kernel_cache NULL (a file for the
 * verdicts); attention_coopmat_per_element -1 (the matrix tile per element of its accumulators where
 * the device has VK_NV_cooperative_matrix2; 0 through shared memory). Fields are added at the end
 * only. Strings are copied. */
typedef struct rfa_context_options {
  const char* device;
  int validation;
  const char* device_profile;
  uint64_t memory_budget;
  int timestamps;
  const char* linear_kernel;
  int attention_direct_kv, attention_lag_table, attention_split_k, attention_tile, attention_f16_math,
      attention_coopmat;
  int push_descriptors;
  int capture_pipeline_statistics;
  uint64_t max_storage_buffer_range;
  uint32_t max_storage_buffers_per_stage;
  int attention_tile_workgroup, attention_fma, attention_q_registers, attention_pad_strides, attention_f16_chunk,
      attention_prefetch, attention_raw_f16, attention_lag_e2, attention_decode_registers, attention_split_cores;
  int verify_kernels;
  const char* kernel_cache;
  int attention_coopmat_per_element;
} rfa_context_options;
RFA_API void rfa_context_options_default(rfa_context_options* o);
RFA_API rfa_status rfa_context_create_ex(const rfa_context_options* options, rfa_context** out);
/* rfa_context_adopt with options (device and validation are the app's and are ignored). */
RFA_API rfa_status rfa_context_adopt_ex(VkInstance instance, VkPhysicalDevice physical_device, VkDevice device,
                                        VkQueue queue, uint32_t queue_family, const rfa_context_options* options,
                                        rfa_context** out);
RFA_API void rfa_context_destroy(rfa_context* ctx);
/* The device's limits and features as the runtime sees them (after any profile and lowered
 * limit), the binding mode and the attention paths it would take: rfa::Context::capabilities_summary.
 * Valid until the next call of this function on the same thread; NULL (with rfa_last_error) for a
 * NULL context. */
RFA_API const char* rfa_context_capabilities(const rfa_context* ctx);
/* The attention paths the kernel check (rfa_context_options.verify_kernels) refused on this
 * context's device, one per line ("" when none): valid until the next call on the same thread;
 * NULL (with rfa_last_error) for a NULL context. */
RFA_API const char* rfa_context_kernel_refusals(const rfa_context* ctx);
/* Validation messages of warning/error severity seen by this context. */
RFA_API uint64_t rfa_context_validation_messages(const rfa_context* ctx);
/* 1 once the context's device was lost (a call returned RFA_ERROR_DEVICE_LOST): every call that
 * needs the GPU then fails the same way; destroy its sessions and the context, create new ones
 * (docs/c-api.md, "When the device fails"). 0 otherwise, and for NULL. */
RFA_API int rfa_context_lost(const rfa_context* ctx);

RFA_API rfa_status rfa_model_load(const char* dir, rfa_model** out);
/* A model folder's files already in memory (bundled assets): the same checks and messages as
 * rfa_model_load, naming `name` (NULL: "memory") where a folder would be named. encoder_json and
 * vocab_bpe: GPT-2 BPE language models only, else NULL / 0. The bytes are copied. */
typedef struct rfa_model_files {
  const char* name;
  const char* config_json;
  size_t config_json_length;
  const void* safetensors;
  size_t safetensors_length;
  const char* encoder_json;
  size_t encoder_json_length;
  const char* vocab_bpe;
  size_t vocab_bpe_length;
} rfa_model_files;
RFA_API rfa_status rfa_model_load_memory(const rfa_model_files* files, rfa_model** out);
RFA_API void rfa_model_destroy(rfa_model* model);
/* Sizes: layers, heads, head_dim (complex dims), input_dim (values per position, 0 for LMs),
 * output_dim (vocab, d_in or d_e), vocab (0 unless LM). Any pointer may be NULL. */
RFA_API rfa_status rfa_model_info(const rfa_model* model, int* layers, int* heads, int* head_dim, int* input_dim,
                          int* output_dim, int* vocab);

/* One head's physical parameters and noise regime (docs/math.md §5). regime: 0 diffusive,
 * 1 integrative, 2 Brownian. stationary_variance / alpha / beta may be +-inf for Brownian heads. */
typedef struct rfa_head_info {
  double mu, sigma2, s2t, eta2, gamma2, nu, kappa, tau, lag_shift;
  double omega_min, omega_max;
  double stationary_variance, alpha, beta;
  int regime;
} rfa_head_info;
RFA_API rfa_status rfa_model_head(const rfa_model* model, int layer, int head, rfa_head_info* out);

RFA_API rfa_status rfa_session_create(rfa_context* ctx, const rfa_model* model, int batch, int max_context,
                              rfa_session** out);
/* Every session option. Start from rfa_session_options_default(). window > 0: a sliding-window KV
 * cache (each position sees its last `window` keys; a stream runs without end; max_context is then
 * ignored); 0: the window the model was trained with (rfa_model_attention_window; none if it has
 * none); -1: no window, even for a model trained with one. last_output_only: outputs of each row's last position only. profile: per-kernel GPU
 * timing. kv: RFA_KV_F32 (default) or RFA_KV_F16 (K/V caches in fp16: half the memory). */
#define RFA_KV_F32 0
#define RFA_KV_F16 1
typedef struct rfa_session_options {
  int batch, max_context, window, last_output_only, profile, kv;
} rfa_session_options;
RFA_API void rfa_session_options_default(rfa_session_options* o);
RFA_API rfa_status rfa_session_create_ex(rfa_context* ctx, const rfa_model* model, const rfa_session_options* options,
                                 rfa_session** out);
RFA_API void rfa_session_destroy(rfa_session* s);
/* Feeds n positions per batch row. ids: [batch*n] (LMs); values: [batch*n*input_dim] (others).
 * timestamps: [batch*n] or NULL (then t = position). step = prefill with n = 1. */
RFA_API rfa_status rfa_session_prefill_tokens(rfa_session* s, const int64_t* ids, int n, const double* timestamps);
RFA_API rfa_status rfa_session_prefill_values(rfa_session* s, const float* values, int n, const double* timestamps);
RFA_API rfa_status rfa_session_reset(rfa_session* s);
RFA_API int rfa_session_position(const rfa_session* s);
/* The oldest position still in the caches (0 without a window): probes reach [oldest, position). */
RFA_API int rfa_session_oldest_position(const rfa_session* s);
/* The window the session runs with (0: none), after a trained window was applied. */
RFA_API int rfa_session_window(const rfa_session* s);
/* The oldest row whose keys are all still cached (what rfa_session_row_diagnostics needs):
 * the oldest position, or oldest + window - 1 once the window has evicted keys. */
RFA_API int rfa_session_first_full_row(const rfa_session* s);
/* What a sliding window cuts off, per (layer, head), for the newest position of batch row b: see
 * rfa::WindowTruncation in rfa/session.hpp. Writes up to `capacity` entries (layers * heads are
 * needed) and their number into *count. measure = 0 skips the GPU-measured edge_mass. */
typedef struct rfa_window_truncation {
  int layer, head;
  double edge_lag, decay_bound, precision_ratio, edge_mass;
} rfa_window_truncation;
RFA_API rfa_status rfa_session_window_report(rfa_session* s, int b, int measure, rfa_window_truncation* out, int capacity,
                                     int* count);
/* Submissions and bytes moved since the session was created (see rfa::SessionStats). */
typedef struct rfa_session_stats {
  uint64_t submits, bytes_up, bytes_down, plans_recorded;
} rfa_session_stats;
RFA_API rfa_status rfa_session_get_stats(const rfa_session* s, rfa_session_stats* out);
/* Outputs of the last prefill/step, [batch][count][output_dim]: copies up to `capacity` floats
 * into `out` and reports the count of positions and the total number of floats. */
RFA_API rfa_status rfa_session_outputs(const rfa_session* s, float* out, size_t capacity, int* count, size_t* floats);
/* Ahat (decayed = 0) or A (decayed = 1) for rows [r0, r1) x cols [c0, c1): (r1-r0)*(c1-c0) floats.
 * RFA_CACHED (-1) for r0 / c0 is the oldest position still cached, for r1 / c1 the position: all
 * four -1 give the (position - oldest)^2 floats of everything still cached. */
#define RFA_CACHED (-1)
RFA_API rfa_status rfa_session_attention(rfa_session* s, int layer, int head, int b, int r0, int r1, int c0, int c1,
                                 int decayed, float* out);

/* Kernel curves of one head over n lags: decay E, covariance Vcov, precision P, bias B (each n
 * doubles; any pointer may be NULL). */
RFA_API rfa_status rfa_session_curves(rfa_session* s, int layer, int head, const double* lags, int n, double* decay,
                              double* vcov, double* precision, double* bias);

/* ---- Attention tomography (rfa/diagnostics.hpp, docs/DIAGNOSTICS.md) ---------------------------
 * Laplace-Radon and routing diagnostics of one head over a window: per-pair work on the GPU, the
 * dense linear algebra (singular values of P, tilt and normal spectra) on the host in double. */
typedef struct rfa_diagnostics_request {
  int layer, head, b;
  /* Rows [r0, r1) and key columns [c0, c1) of P, absolute positions. r1 / c1 < 0: through the newest
   * position; r0 / c0 < 0: the last -r0 / -c0 positions before r1 / c1. */
  int r0, r1, c0, c1;
  double alpha;         /* temperature: logits scaled by alpha (> 0) */
  const double* sweep;  /* more temperatures (may be NULL), sweep_count of them (<= 64) */
  int sweep_count;
  int decayed;          /* 1: the spectrum of A = Ahat E instead of Ahat */
  int spectrum;         /* 1: singular values of P (rows, cols <= 1024); 0: skip them */
  int keep_tilts;       /* 1: keep u_i for rfa_diagnostics_array(RFA_DIAG_TILTS) */
} rfa_diagnostics_request;
/* Fills the defaults: layer 0, head 0, b 0, the whole context, alpha 1, no sweep, spectrum on. */
RFA_API void rfa_diagnostics_request_init(rfa_diagnostics_request* r);

typedef struct rfa_diagnostics rfa_diagnostics; /* a result; free with rfa_diagnostics_destroy */

/* Statistics pooled over queries and keys (from one result, or from several: rfa_diagnostics_pool). */
typedef struct rfa_moment_summary {
  long long queries, keys;
  double var_q, var_k;                 /* mean over dims of the per-dim variance */
  double tau_mean, tau_std, tau_chi_mean;
  double logit_std, logit_std_meanfield;
  double dim_eff_u, dim_eff_n;         /* participation ratios of C_u and of C_n, n = W_k^T u0 */
} rfa_moment_summary;

typedef struct rfa_diagnostics_summary {
  int layer, head, b, r0, r1, c0, c1; /* the window actually used */
  int d;                              /* real dims of q and k (2 x head_dim) */
  int rows, singular_value_count, sweep_count;
  double alpha, entropy_mean, max_weight_mean;
  double erank;                       /* Roy-Vetterli effective rank of P */
  int rank, nullity;                  /* numerical rank (tol max(m,n) sigma_1 2^-23) and cols - rank */
  rfa_moment_summary moments;
  double gpu_ms, svd_ms, eigen_ms, host_ms, wall_ms;
} rfa_diagnostics_summary;

typedef struct rfa_query_diagnostics {
  int position, keys;
  double q_norm, tau, entropy, log_partition, max_weight;
  double mean_s, var_s;               /* E_p, Var_p of s = u . k */
  double mean_logit, var_logit, expected_lag;
} rfa_query_diagnostics;

typedef struct rfa_sweep_point {
  double alpha, entropy, max_weight, erank;
  int rank;
} rfa_sweep_point;

typedef enum rfa_diagnostics_array_kind {
  RFA_DIAG_SINGULAR_VALUES = 0, /* of P, descending */
  RFA_DIAG_TILT_SPECTRUM = 1,   /* eigenvalues of C_u = E[u u^T], descending (d) */
  RFA_DIAG_NORMAL_SPECTRUM = 2, /* non-zero part of the eigenvalues of C_n (d) */
  RFA_DIAG_TILTS = 3            /* [rows][d] u_i, with keep_tilts */
} rfa_diagnostics_array_kind;

RFA_API rfa_status rfa_session_head_diagnostics(rfa_session* s, const rfa_diagnostics_request* request, rfa_diagnostics** out);
RFA_API void rfa_diagnostics_destroy(rfa_diagnostics* d);
RFA_API rfa_status rfa_diagnostics_get_summary(const rfa_diagnostics* d, rfa_diagnostics_summary* out);
/* The copy calls below write up to `capacity` items into `out` (NULL: only report *count); a
 * capacity below the count is an error. */
RFA_API rfa_status rfa_diagnostics_rows(const rfa_diagnostics* d, rfa_query_diagnostics* out, size_t capacity, size_t* count);
RFA_API rfa_status rfa_diagnostics_array(const rfa_diagnostics* d, rfa_diagnostics_array_kind which, double* out,
                                 size_t capacity, size_t* count);
RFA_API rfa_status rfa_diagnostics_sweep(const rfa_diagnostics* d, rfa_sweep_point* out, size_t capacity, size_t* count);
/* Singular values of P at sweep point k. */
RFA_API rfa_status rfa_diagnostics_sweep_singular_values(const rfa_diagnostics* d, int k, double* out, size_t capacity,
                                                 size_t* count);
/* Pools the moments of `count` results of one head (windows, batch rows, stream chunks). */
RFA_API rfa_status rfa_diagnostics_pool(const rfa_diagnostics* const* list, int count, rfa_moment_summary* out);

/* ---- model description, tokenizer and the CPU reference ---------------------------------------
 * Strings returned here live as long as the model; a NULL model gives "". */
RFA_API const char* rfa_model_architecture(const rfa_model* model); /* "lm", "signal" or "attention" */
RFA_API const char* rfa_model_name(const rfa_model* model);         /* the folder's name */
RFA_API const char* rfa_model_tokenizer(const rfa_model* model);    /* "bytes", "gpt2", or "" (no tokenizer) */
/* More sizes: model width d_e, FFN width, and t_equal (1: positions are the timestamps, and
 * timestamps passed in are ignored, as in the reference code). Any pointer may be NULL. */
RFA_API rfa_status rfa_model_dims(const rfa_model* model, int* d_e, int* hidden, int* t_equal);
/* The attention window the model was trained with (args.attention_window; 0: none). A session
 * created with window 0 runs with it. */
RFA_API rfa_status rfa_model_attention_window(const rfa_model* model, int* window);

/* Language models: text (length bytes, any encoding the tokenizer accepts) -> token ids. Writes up
 * to `capacity` ids into `ids` (NULL to ask for the count only) and the total into *count; when
 * capacity is too small nothing is written and RFA_ERROR_INVALID_ARGUMENT is returned. */
RFA_API rfa_status rfa_model_encode(const rfa_model* model, const char* text, size_t length, int64_t* ids, size_t capacity,
                            size_t* count);
/* Token ids -> bytes (not NUL-terminated; a single id gives its byte or BPE piece). Same capacity
 * rules as rfa_model_encode, in bytes. Ids outside the vocabulary are skipped. */
RFA_API rfa_status rfa_model_decode(const rfa_model* model, const int64_t* ids, size_t n, char* out, size_t capacity,
                            size_t* length);

/* REFERENCE ONLY (slow; for checking results): the model's double-precision CPU twin on batch
 * sequences of n positions. values [batch*n*input_dim] (signal/attention models) or ids [batch*n]
 * (LMs), the other NULL; timestamps [batch*n] or NULL. out: [batch*n*output_dim] doubles.
 * In librfa_reference, not librfa: link -lrfa_reference -lrfa (pkg-config rfa_reference). */
RFA_REFERENCE_API rfa_status rfa_model_reference_forward(const rfa_model* model, int batch, int n, const double* values,
                                       const int64_t* ids, const double* timestamps, double* out);

/* ---- context and session queries --------------------------------------------------------------- */
/* The context's device name and type ("discrete", "integrated", "virtual", "cpu", "other"); the
 * strings live as long as the context. */
RFA_API rfa_status rfa_context_device(rfa_context* ctx, const char** name, const char** type);

RFA_API int rfa_session_batch(const rfa_session* s);
/* Positions the caches hold per batch row: max_context as asked, or, with a window, the ring's
 * window + min(window, 256) - 1 slots (a window ignores max_context). */
RFA_API int rfa_session_max_context(const rfa_session* s);
/* Timestamps of the positions still cached of batch row b, [oldest, position): up to capacity
 * doubles, *count = position - oldest. */
RFA_API rfa_status rfa_session_timestamps(const rfa_session* s, int b, double* out, size_t capacity, size_t* count);

/* Diagnostics of query rows [r0, r1) of one head (docs/math.md §7): entropy of Ahat, log-partition,
 * largest weight, expected lag under A, and the mass of A beyond each of 4 lag thresholds. */
typedef struct rfa_row_diagnostics {
  double entropy, log_partition, max_weight, expected_lag;
  double mass_beyond[4];
} rfa_row_diagnostics;
/* thresholds: 4 lags (NULL: 1, 4, 16, 64). out: r1 - r0 entries. Every key of the rows must still
 * be cached: r0 = RFA_CACHED starts at rfa_session_first_full_row, r1 = RFA_CACHED at the position. */
RFA_API rfa_status rfa_session_row_diagnostics(rfa_session* s, int layer, int head, int b, int r0, int r1,
                                       const double* thresholds, rfa_row_diagnostics* out);

/* Every term of one (query i, key j) pair of a head, from the caches (the viewer's hover readout). */
typedef struct rfa_pair_readout {
  int masked;                   /* 1: hidden by the causal mask (then only lag, dt and decay are set) */
  double lag, dt;               /* t_i - t_j, and lag + lag shift */
  double decay, vcov, bias, precision;
  double q_norm2, k_norm2, cross, residual2;
  double L, logit;              /* B - kappa log(1 + P R2) (or B - P R2), and tau L */
  double ahat, a;               /* the attention weight and the decayed weight A = Ahat E */
} rfa_pair_readout;
RFA_API rfa_status rfa_session_pair(rfa_session* s, int layer, int head, int b, int i, int j, rfa_pair_readout* out);

/* Generation (language models, after a prompt): samples `tokens` tokens per batch row (the first
 * from the last call's logits), feeding all but the last. Sampling as rfa::Sampler: temperature
 * <= 0 greedy, top_k <= 0 and top_p >= 1 no limit, seeded. on_gpu: 1 samples on the GPU and feeds
 * each token on the device (only ids come back); 0 samples on the host from read-back logits.
 * out_tokens: [batch * tokens] int64, row-major. */
RFA_API rfa_status rfa_session_generate(rfa_session* s, int tokens, double temperature, int top_k, double top_p,
                                uint64_t seed, int on_gpu, int64_t* out_tokens);

#ifdef __cplusplus
}
#endif
#endif /* RFA_H */
