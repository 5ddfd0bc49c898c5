/* RFA-VK C API: embed the runtime from C (or any language with a C FFI).
 * Every call returns an rfa_status; on failure rfa_last_error() gives the message (per thread).
 * Handles are opaque; each _destroy accepts NULL. */
#ifndef RFA_H
#define RFA_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

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

const char* rfa_version(void);
/* The message of the last failed call on this thread ("" if none). */
const char* rfa_last_error(void);
const char* rfa_status_name(rfa_status s);

/* Devices: count, then the name/type of device i (pointers stay valid until the next call). */
rfa_status rfa_device_count(int* count);
rfa_status rfa_device_name(int index, const char** name, const char** type);

/* device: NULL or "" for the best device, else an index or a name substring.
 * validation: -1 follows RFA_VALIDATION, 0 off, 1 on. */
rfa_status rfa_context_create(const char* device, int validation, rfa_context** out);
/* Adopts an app's Vulkan objects; the runtime never destroys them. */
rfa_status rfa_context_adopt(VkInstance instance, VkPhysicalDevice physical_device, VkDevice device, VkQueue queue,
                             uint32_t queue_family, rfa_context** out);
void rfa_context_destroy(rfa_context* ctx);
/* Validation messages of warning/error severity seen by this context. */
uint64_t rfa_context_validation_messages(const rfa_context* ctx);

rfa_status rfa_model_load(const char* dir, rfa_model** out);
void rfa_model_destroy(rfa_model* model);
/* Sizes: layers, heads, head_dim (complex dims), input_dim (values per position, 0 for LMs),
 * output_dim (vocab, d_in or d_e), vocab (0 unless LM). Any pointer may be NULL. */
rfa_status rfa_model_info(const rfa_model* model, int* layers, int* heads, int* head_dim, int* input_dim,
                          int* output_dim, int* vocab);

/* One head's physical parameters and noise regime (RFA.md §5). regime: 0 diffusive,
 * 1 integrative, 2 Brownian. stationary_variance / alpha / beta may be +-inf for Brownian heads. */
typedef struct rfa_head_info {
  double mu, sigma2, s2t, eta2, gamma2, nu, kappa, tau, lag_shift;
  double omega_min, omega_max;
  double stationary_variance, alpha, beta;
  int regime;
} rfa_head_info;
rfa_status rfa_model_head(const rfa_model* model, int layer, int head, rfa_head_info* out);

rfa_status rfa_session_create(rfa_context* ctx, const rfa_model* model, int batch, int max_context,
                              rfa_session** out);
/* Every session option. Start from rfa_session_options_default(). window > 0: a sliding-window KV
 * cache (each position sees its last `window` keys; a stream runs without end; max_context is then
 * ignored). last_output_only: outputs of each row's last position only. profile: per-kernel GPU
 * timing. */
typedef struct rfa_session_options {
  int batch, max_context, window, last_output_only, profile;
} rfa_session_options;
void rfa_session_options_default(rfa_session_options* o);
rfa_status rfa_session_create_ex(rfa_context* ctx, const rfa_model* model, const rfa_session_options* options,
                                 rfa_session** out);
void rfa_session_destroy(rfa_session* s);
/* Feeds n positions per batch row. ids: [batch*n] (LMs); values: [batch*n*input_dim] (others).
 * timestamps: [batch*n] or NULL (then t = position). step = prefill with n = 1. */
rfa_status rfa_session_prefill_tokens(rfa_session* s, const int64_t* ids, int n, const double* timestamps);
rfa_status rfa_session_prefill_values(rfa_session* s, const float* values, int n, const double* timestamps);
rfa_status rfa_session_reset(rfa_session* s);
int rfa_session_position(const rfa_session* s);
/* The oldest position still in the caches (0 without a window): probes reach [oldest, position). */
int rfa_session_oldest_position(const rfa_session* s);
/* What a sliding window cuts off, per (layer, head), for the newest position of batch row b: see
 * rfa::WindowTruncation in rfa/session.hpp. Writes up to `capacity` entries (layers * heads are
 * needed) and their number into *count. measure = 0 skips the GPU-measured edge_mass. */
typedef struct rfa_window_truncation {
  int layer, head;
  double edge_lag, decay_bound, precision_ratio, edge_mass;
} rfa_window_truncation;
rfa_status rfa_session_window_report(rfa_session* s, int b, int measure, rfa_window_truncation* out, int capacity,
                                     int* count);
/* Submissions and bytes moved since the session was created (see rfa::SessionStats). */
typedef struct rfa_session_stats {
  uint64_t submits, bytes_up, bytes_down, plans_recorded;
} rfa_session_stats;
rfa_status rfa_session_get_stats(const rfa_session* s, rfa_session_stats* out);
/* Outputs of the last prefill/step, [batch][count][output_dim]: copies up to `capacity` floats
 * into `out` and reports the count of positions and the total number of floats. */
rfa_status rfa_session_outputs(const rfa_session* s, float* out, size_t capacity, int* count, size_t* floats);
/* Ahat (decayed = 0) or A (decayed = 1) for rows [r0, r1) x cols [c0, c1): (r1-r0)*(c1-c0) floats. */
rfa_status rfa_session_attention(rfa_session* s, int layer, int head, int b, int r0, int r1, int c0, int c1,
                                 int decayed, float* out);

/* Kernel curves of one head over n lags: decay E, covariance Vcov, precision P, bias B (each n
 * doubles; any pointer may be NULL). */
rfa_status rfa_session_curves(rfa_session* s, int layer, int head, const double* lags, int n, double* decay,
                              double* vcov, double* precision, double* bias);

#ifdef __cplusplus
}
#endif
#endif /* RFA_H */
