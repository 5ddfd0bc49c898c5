/* hello_rfa (C): load a model folder, print each head's noise regime, run one prefill on the best
 * Vulkan device, and check one attention row. Every call returns an rfa_status; rfa_last_error()
 * says what went wrong.
 *   hello_rfa_c <prefix>/share/rfa/models/tiny-char-lm */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfa/environment.h"
#include "rfa/rfa.h"

static int check(rfa_status s, const char* what) {
  if (s == RFA_OK) return 0;
  fprintf(stderr, "%s: %s (%s)\n", what, rfa_last_error(), rfa_status_name(s));
  exit(1);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  rfa_model* model = NULL;
  check(rfa_model_load(argv[1], &model), "load");
  int layers, heads, input_dim, output_dim;
  check(rfa_model_info(model, &layers, &heads, NULL, &input_dim, &output_dim, NULL), "info");
  printf("%s: %s, %d layers x %d heads (RFA-VK %s)\n", rfa_model_name(model), rfa_model_architecture(model), layers,
         heads, rfa_version());
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      rfa_head_info hi;
      check(rfa_model_head(model, l, h, &hi), "head");
      static const char* names[] = {"diffusive", "integrative", "brownian"};
      printf("  layer %d head %d: mu %.4g, regime %s\n", l, h, hi.mu, names[hi.regime]);
    }

  rfa_context* ctx = NULL;
  rfa_context_options options;
  rfa_context_options_default(&options);
  rfa_context_options_from_environment(&options); /* RFA_DEVICE, RFA_VALIDATION: the app reads them */
  check(rfa_context_create_ex(&options, &ctx), "context");
  rfa_session* s = NULL;
  check(rfa_session_create(ctx, model, 1, 64, &s), "session");
  enum { N = 16 };
  if (strcmp(rfa_model_architecture(model), "lm") == 0) {
    int64_t ids[N];
    size_t count = 0;
    const char* text = "Once upon a time";
    check(rfa_model_encode(model, text, strlen(text), ids, N, &count), "encode");
    check(rfa_session_prefill_tokens(s, ids, (int)count, NULL), "prefill");
  } else {
    float* x = calloc((size_t)N * input_dim, sizeof(float));
    for (int i = 0; i < N * input_dim; ++i) x[i] = (float)sin(0.1 * i);
    check(rfa_session_prefill_values(s, x, N, NULL), "prefill");
    free(x);
  }
  const int n = rfa_session_position(s);
  float row[64];
  check(rfa_session_attention(s, 0, 0, 0, n - 1, n, 0, n, 0, row), "attention");
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += row[j];
  printf("prefilled %d positions on the device; Ahat row %d of layer 0 head 0 sums to %.6f\n", n, n - 1, sum);
  rfa_session_destroy(s);
  rfa_context_destroy(ctx);
  rfa_model_destroy(model);
  return fabs(sum - 1.0) < 1e-3 ? 0 : 1;
}
