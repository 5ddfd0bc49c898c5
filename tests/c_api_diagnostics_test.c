/* The attention tomography's C API from C (rfa.h, "Attention tomography"), on a model written by
 * rfa-make-model (argv[1]): a request with a sweep, the summary, rows, arrays, sweep points, pooled
 * moments, row entropies against the plain probe's map, and the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum { N = 20 };

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_diagnostics_test MODEL_DIR\n");
    return 2;
  }
  rfa_context* ctx = NULL;
  rfa_model* model = NULL;
  rfa_session* s = NULL;
  CHECK(rfa_context_create(NULL, test_validation(), &ctx) == RFA_OK);
  CHECK(rfa_model_load(argv[1], &model) == RFA_OK);
  if (!ctx || !model) return 1;
  int heads = 0, hd = 0, in_dim = 0;
  CHECK(rfa_model_info(model, NULL, &heads, &hd, &in_dim, NULL, NULL) == RFA_OK);
  CHECK(rfa_session_create(ctx, model, 1, 32, &s) == RFA_OK);
  float* x = malloc(sizeof(float) * N * (size_t)in_dim);
  for (int i = 0; i < N * in_dim; ++i) x[i] = (float)(2.0 * sin(0.37 * i + 0.1 * (i % 5)));
  CHECK(rfa_session_prefill_values(s, x, N, NULL) == RFA_OK);

  rfa_diagnostics_request r;
  rfa_diagnostics_request_init(&r);
  CHECK(r.alpha == 1.0 && r.r1 == -1 && r.c1 == -1 && r.spectrum == 1 && r.sweep == NULL);
  const double sweep[2] = {0.5, 2.0};
  r.head = heads - 1;
  r.sweep = sweep;
  r.sweep_count = 2;
  r.keep_tilts = 1;
  rfa_diagnostics* d = NULL;
  CHECK(rfa_session_head_diagnostics(s, &r, &d) == RFA_OK && d);
  if (!d) return 1;
  rfa_diagnostics_summary sum;
  CHECK(rfa_diagnostics_get_summary(d, &sum) == RFA_OK);
  CHECK(sum.rows == N && sum.r0 == 0 && sum.r1 == N && sum.c0 == 0 && sum.c1 == N && sum.head == heads - 1);
  CHECK(sum.d == 2 * hd && sum.singular_value_count == N && sum.sweep_count == 2);
  CHECK(sum.erank >= 1.0 && sum.erank <= N && sum.rank == N && sum.nullity == 0); /* causal: full rank */
  CHECK(sum.moments.queries == N && sum.moments.dim_eff_u >= 1.0 && sum.moments.dim_eff_u <= sum.d);
  CHECK(sum.moments.dim_eff_n >= 1.0 && sum.moments.dim_eff_n <= sum.d && sum.moments.tau_mean > 0);
  CHECK(sum.wall_ms > 0);

  /* Rows: count first, then copy; each row's entropy against the probed Ahat row. */
  size_t count = 0;
  CHECK(rfa_diagnostics_rows(d, NULL, 0, &count) == RFA_OK && count == N);
  rfa_query_diagnostics rows[N];
  CHECK(rfa_diagnostics_rows(d, rows, 3, &count) == RFA_ERROR_INVALID_ARGUMENT);
  CHECK(rfa_diagnostics_rows(d, rows, N, &count) == RFA_OK);
  float map[N * N];
  CHECK(rfa_session_attention(s, 0, heads - 1, 0, 0, N, 0, N, 0, map) == RFA_OK);
  double worst = 0;
  for (int i = 0; i < N; ++i) {
    double h = 0, mx = 0;
    for (int j = 0; j <= i; ++j) {
      const double p = map[i * N + j];
      if (p > 0) h -= p * log(p);
      if (p > mx) mx = p;
    }
    CHECK(rows[i].position == i && rows[i].keys == i + 1);
    if (fabs(rows[i].entropy - h) > worst) worst = fabs(rows[i].entropy - h);
    CHECK(fabs(rows[i].max_weight - mx) < 1e-5);
  }
  CHECK(worst < 1e-4);
  CHECK(rows[0].entropy == 0.0 && rows[0].max_weight == 1.0); /* one key */

  /* Arrays. */
  double sv[N], spec[128], tilts[N * 128];
  CHECK(rfa_diagnostics_array(d, RFA_DIAG_SINGULAR_VALUES, sv, N, &count) == RFA_OK && count == N);
  for (int k = 1; k < N; ++k) CHECK(sv[k] <= sv[k - 1]);
  CHECK(rfa_diagnostics_array(d, RFA_DIAG_TILT_SPECTRUM, spec, 128, &count) == RFA_OK && (int)count == sum.d);
  double trace = 0;
  for (size_t k = 0; k < count; ++k) trace += spec[k];
  CHECK(fabs(trace - 1.0) < 1e-6); /* C_u = E[u u^T] has trace 1 */
  CHECK(rfa_diagnostics_array(d, RFA_DIAG_NORMAL_SPECTRUM, NULL, 0, &count) == RFA_OK && (int)count == sum.d);
  CHECK(rfa_diagnostics_array(d, RFA_DIAG_TILTS, tilts, N * 128, &count) == RFA_OK && (int)count == N * sum.d);
  for (int i = 0; i < N; ++i) {
    double n2 = 0;
    for (int k = 0; k < sum.d; ++k) n2 += tilts[i * sum.d + k] * tilts[i * sum.d + k];
    CHECK(fabs(n2 - 1.0) < 1e-5);
  }
  CHECK(rfa_diagnostics_array(d, (rfa_diagnostics_array_kind)9, spec, 128, &count) == RFA_ERROR_INVALID_ARGUMENT);

  /* Sweep: entropy falls and the max weight rises with alpha. */
  rfa_sweep_point pts[2];
  CHECK(rfa_diagnostics_sweep(d, pts, 2, &count) == RFA_OK && count == 2);
  CHECK(pts[0].alpha == 0.5 && pts[1].alpha == 2.0);
  CHECK(pts[0].entropy >= sum.entropy_mean && sum.entropy_mean >= pts[1].entropy);
  CHECK(pts[0].max_weight <= sum.max_weight_mean && sum.max_weight_mean <= pts[1].max_weight);
  CHECK(rfa_diagnostics_sweep_singular_values(d, 1, sv, N, &count) == RFA_OK && count == N);
  CHECK(rfa_diagnostics_sweep_singular_values(d, 2, sv, N, &count) == RFA_ERROR_INVALID_ARGUMENT);

  /* Pooling two halves equals the whole window. */
  rfa_diagnostics *a = NULL, *b = NULL;
  rfa_diagnostics_request_init(&r);
  r.head = heads - 1;
  r.spectrum = 0;
  r.r0 = 0, r.r1 = 9, r.c0 = 0, r.c1 = 9;
  CHECK(rfa_session_head_diagnostics(s, &r, &a) == RFA_OK);
  r.r0 = 9, r.r1 = N, r.c0 = 9, r.c1 = N;
  CHECK(rfa_session_head_diagnostics(s, &r, &b) == RFA_OK);
  const rfa_diagnostics* both[2] = {a, b};
  rfa_moment_summary pooled;
  CHECK(rfa_diagnostics_pool(both, 2, &pooled) == RFA_OK);
  CHECK(pooled.queries == N && pooled.keys == N);
  CHECK(fabs(pooled.dim_eff_u - sum.moments.dim_eff_u) < 1e-9 * sum.moments.dim_eff_u);
  CHECK(fabs(pooled.dim_eff_n - sum.moments.dim_eff_n) < 1e-9 * sum.moments.dim_eff_n);
  CHECK(fabs(pooled.tau_mean - sum.moments.tau_mean) < 1e-9);

  /* Errors: the message names the argument. */
  rfa_diagnostics* bad = NULL;
  rfa_diagnostics_request_init(&r);
  r.alpha = 0;
  CHECK(rfa_session_head_diagnostics(s, &r, &bad) == RFA_ERROR_INVALID_ARGUMENT && bad == NULL);
  CHECK(strstr(rfa_last_error(), "alpha") != NULL);
  rfa_diagnostics_request_init(&r);
  r.head = heads;
  CHECK(rfa_session_head_diagnostics(s, &r, &bad) == RFA_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rfa_last_error(), "head") != NULL);
  rfa_diagnostics_request_init(&r);
  r.sweep_count = 3;
  CHECK(rfa_session_head_diagnostics(s, &r, &bad) == RFA_ERROR_INVALID_ARGUMENT);
  CHECK(rfa_session_head_diagnostics(NULL, &r, &bad) == RFA_ERROR_INVALID_ARGUMENT);
  CHECK(rfa_diagnostics_get_summary(NULL, &sum) == RFA_ERROR_INVALID_ARGUMENT);
  CHECK(rfa_diagnostics_pool(both, 0, &pooled) == RFA_ERROR_INVALID_ARGUMENT);

  rfa_diagnostics_destroy(a);
  rfa_diagnostics_destroy(b);
  rfa_diagnostics_destroy(d);
  rfa_diagnostics_destroy(NULL);
  free(x);
  rfa_session_destroy(s);
  rfa_model_destroy(model);
  CHECK(rfa_context_validation_messages(ctx) == 0);
  rfa_context_destroy(ctx);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
