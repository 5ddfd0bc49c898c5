// The C API, context and session queries: device, timestamps, row diagnostics, pair readouts.
#include <algorithm>
#include <string>

#include "capi/capi_support.hpp"
#include "rfa/rfa.h"
#include "rfa/inspect.hpp"

using namespace rfa::capi;

extern "C" {

rfa_status rfa_context_device(rfa_context* ctx, const char** name, const char** type) {
  if (!ctx) return invalid("ctx is NULL");
  return guarded([&] {
    if (!ctx->info_known) {
      ctx->info = ctx->ctx->device_info();
      ctx->info_known = true;
    }
    if (name) *name = ctx->info.name.c_str();
    if (type) *type = ctx->info.type.c_str();
    return RFA_OK;
  });
}

int rfa_session_batch(const rfa_session* s) { return s ? s->session->batch() : 0; }
int rfa_session_max_context(const rfa_session* s) { return s ? s->session->max_context() : 0; }

rfa_status rfa_session_timestamps(const rfa_session* s, int b, double* out, size_t capacity, size_t* count) {
  if (!s || !count) return invalid("session or count is NULL");
  if (b < 0 || b >= s->session->batch())
    return invalid("batch row " + std::to_string(b) + " out of range [0, " + std::to_string(s->session->batch()) + ")");
  return guarded([&] {
    const std::vector<double> t = rfa::Inspector(*s->session).timestamps(b);
    *count = t.size();
    if (!out) return RFA_OK;
    if (capacity < t.size()) return invalid("out capacity is smaller than the " + std::to_string(t.size()) + " positions");
    std::copy(t.begin(), t.end(), out);
    return RFA_OK;
  });
}

rfa_status rfa_session_row_diagnostics(rfa_session* s, int layer, int head, int b, int r0, int r1,
                                       const double* thresholds, rfa_row_diagnostics* out) {
  if (!s || !out) return invalid("session or out is NULL");
  return guarded([&] {
    const double defaults[4] = {1, 4, 16, 64};
    auto d = rfa::Inspector(*s->session).row_diagnostics(layer, head, b, r0, r1, thresholds ? thresholds : defaults);
    if (!d) return to_c(d.status());
    for (size_t k = 0; k < d->size(); ++k) {
      const rfa::RowDiagnostics& r = (*d)[k];
      out[k] = {r.entropy, r.log_partition, r.max_weight, r.expected_lag,
                {r.mass_beyond[0], r.mass_beyond[1], r.mass_beyond[2], r.mass_beyond[3]}};
    }
    return RFA_OK;
  });
}

rfa_status rfa_session_pair(rfa_session* s, int layer, int head, int b, int i, int j, rfa_pair_readout* out) {
  if (!s || !out) return invalid("session or out is NULL");
  return guarded([&] {
    auto p = rfa::Inspector(*s->session).pair(layer, head, b, i, j);
    if (!p) return to_c(p.status());
    *out = {p->masked ? 1 : 0, p->lag,     p->dt,    p->decay,     p->vcov, p->bias, p->precision, p->q_norm2,
            p->k_norm2,        p->cross,   p->residual2, p->L,     p->logit, p->ahat, p->a};
    return RFA_OK;
  });
}

rfa_status rfa_session_generate(rfa_session* s, int tokens, double temperature, int top_k, double top_p,
                                uint64_t seed, int on_gpu, int64_t* out_tokens) {
  if (!s || !out_tokens) return invalid("session or out_tokens is NULL");
  return guarded([&] {
    rfa::GenerateOptions o;
    o.tokens = tokens;
    o.sampler = {temperature, top_k, top_p, seed};
    o.on_gpu = on_gpu != 0;
    auto g = s->session->generate(o);
    if (!g) return to_c(g.status());
    std::copy(g->tokens.begin(), g->tokens.end(), out_tokens);
    return RFA_OK;
  });
}

}  // extern "C"
