/* The recovery docs/c-api.md shows, in C, shown working: a stream of the bundled spiral-filter
 * model loses its device in the middle (VK_ERROR_DEVICE_LOST injected into a vkQueueSubmit through
 * tests/fault/rfa_faults.h), destroys its session and context, creates new ones, prefills them
 * from its own copy of what it fed and goes on with the outputs of a stream that never broke; and
 * an out-of-memory (an injected VK_ERROR_OUT_OF_DEVICE_MEMORY) is retried on the same session.
 * Usage: c_api_fault_test MODEL_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault/rfa_faults.h"
#include "rfa/environment.h"
#include "rfa/rfa.h"

#define STEPS 120
#define LOSE_AT 97

static int failures = 0;
#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                    \
    }                                                                \
  } while (0)

/* The app's stream: its handles and its own copy of every position fed. */
typedef struct stream {
  const rfa_model* model;
  rfa_context* ctx;
  rfa_session* session;
  float xs[2 * STEPS];
  double ts[STEPS];
  int fed, recoveries;
} stream;

/* A new context and session (after destroying the old ones), fed the history in one call. */
static rfa_status stream_open(stream* s) {
  rfa_session_destroy(s->session); /* everything made on a lost context goes before it */
  rfa_context_destroy(s->ctx);
  s->session = NULL;
  s->ctx = NULL;
  rfa_context_options o;
  rfa_context_options_default(&o);
  rfa_context_options_from_environment(&o); /* RFA_DEVICE, RFA_VALIDATION (on under CTest) */
  rfa_status st = rfa_context_create_ex(&o, &s->ctx);
  if (st == RFA_OK) st = rfa_session_create(s->ctx, s->model, 1, 256, &s->session);
  if (st == RFA_OK && s->fed > 0) st = rfa_session_prefill_values(s->session, s->xs, s->fed, s->ts);
  return st;
}

/* One position; on RFA_ERROR_DEVICE_LOST, the recovery, then the position again. */
static rfa_status stream_step(stream* s, const float x[2], double t) {
  rfa_status st = rfa_session_prefill_values(s->session, x, 1, &t);
  if (st == RFA_ERROR_DEVICE_LOST) {
    ++s->recoveries;
    st = stream_open(s);
    if (st == RFA_OK) st = rfa_session_prefill_values(s->session, x, 1, &t);
  }
  if (st == RFA_OK) {
    s->xs[2 * s->fed] = x[0];
    s->xs[2 * s->fed + 1] = x[1];
    s->ts[s->fed++] = t;
  }
  return st;
}

static void signal_at(int p, float x[2], double* t) {
  x[0] = (float)sin(0.3 * p);
  x[1] = (float)cos(0.21 * p);
  *t = 0.7 * p;
}

/* Streams STEPS positions, losing the device at position lose_at (-1: never); out [STEPS][2]. */
static int run(const rfa_model* model, int lose_at, float* out) {
  stream* s = (stream*)calloc(1, sizeof(stream));
  s->model = model;
  if (stream_open(s) != RFA_OK) return fprintf(stderr, "open: %s\n", rfa_last_error()), -1;
  for (int p = 0; p < STEPS; ++p) {
    float x[2];
    double t;
    signal_at(p, x, &t);
    if (p == lose_at) CHECK(rfa_faults_arm_call("vkQueueSubmit", 1, VK_ERROR_DEVICE_LOST) == 0);
    if (stream_step(s, x, t) != RFA_OK) return fprintf(stderr, "position %d: %s\n", p, rfa_last_error()), -1;
    int count = 0;
    size_t floats = 0;
    CHECK(rfa_session_outputs(s->session, out + 2 * p, 2, &count, &floats) == RFA_OK && floats == 2);
  }
  rfa_faults_disarm();
  CHECK(rfa_context_validation_messages(s->ctx) == 0);
  CHECK(!rfa_context_lost(s->ctx));
  const int recoveries = s->recoveries;
  rfa_session_destroy(s->session);
  rfa_context_destroy(s->ctx);
  free(s);
  return recoveries;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: c_api_fault_test MODEL_DIR\n"), 2;
  if (rfa_faults_install() != 0) return fprintf(stderr, "%s\n", rfa_last_error()), 1;
  rfa_model* model = NULL;
  if (rfa_model_load(argv[1], &model) != RFA_OK) return fprintf(stderr, "%s\n", rfa_last_error()), 1;

  static float want[2 * STEPS], got[2 * STEPS];
  CHECK(run(model, -1, want) == 0);
  CHECK(run(model, LOSE_AT, got) == 1);
  for (int i = 0; i < 2 * LOSE_AT; ++i) CHECK(got[i] == want[i]);
  double worst = 0;
  for (int i = 2 * LOSE_AT; i < 2 * STEPS; ++i) {
    const double d = fabs((double)got[i] - want[i]) / (1e-5 + 1e-5 * fabs((double)want[i]));
    if (d > worst) worst = d;
  }
  CHECK(worst <= 1.0); /* prefill and streaming agree to float32 rounding */

  /* Out of memory: the same session, the same call, once the memory is back. */
  stream* s = (stream*)calloc(1, sizeof(stream));
  s->model = model;
  CHECK(stream_open(s) == RFA_OK);
  float x[2 * 5];
  double t[5];
  for (int p = 0; p < 5; ++p) signal_at(p, x + 2 * p, t + p);
  CHECK(rfa_faults_arm_call("vkAllocateMemory", 1, VK_ERROR_OUT_OF_DEVICE_MEMORY) == 0);
  rfa_status st = rfa_session_prefill_values(s->session, x, 5, t);
  CHECK(rfa_faults_fired());
  CHECK(st == RFA_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(rfa_last_error(), "vkAllocateMemory") && strstr(rfa_last_error(), "VK_ERROR_OUT_OF_DEVICE_MEMORY"));
  CHECK(rfa_session_position(s->session) == 0 && !rfa_context_lost(s->ctx));
  CHECK(rfa_session_prefill_values(s->session, x, 5, t) == RFA_OK);
  float y[2 * 5];
  int count = 0;
  size_t floats = 0;
  CHECK(rfa_session_outputs(s->session, y, 10, &count, &floats) == RFA_OK && count == 5);
  CHECK(rfa_context_validation_messages(s->ctx) == 0);
  rfa_session_destroy(s->session);
  rfa_context_destroy(s->ctx);
  free(s);
  rfa_model_destroy(model);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("c_api_fault_test: recovered from a lost device with the unbroken outputs; out of memory retried\n");
  return failures ? 1 : 0;
}
