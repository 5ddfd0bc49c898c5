// The C API of the attention tomography (rfa.h, "Attention tomography"): a result handle owning an
// rfa::HeadDiagnostics, plain C structs for its scalars, rows and sweep, copy calls for its arrays.
// No exception or C++ type crosses this boundary.
#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "capi/capi_internal.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/inspect.hpp"

struct rfa_diagnostics {
  rfa::HeadDiagnostics d;
};

namespace {

using rfa::capi::report;
using rfa::capi::report_invalid;

template <typename F>
rfa_status guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return report(rfa::Status(rfa::Code::out_of_memory, "host allocation failed"));
  } catch (const std::exception& e) {
    return report(rfa::Status(rfa::Code::device_error, std::string("internal error: ") + e.what()));
  }
}

// Copies `src` into out[capacity] (out may be NULL: count only).
template <typename T>
rfa_status copy_out(const std::vector<T>& src, T* out, size_t capacity, size_t* count) {
  if (count) *count = src.size();
  if (!out) return RFA_OK;
  if (capacity < src.size()) return report_invalid("capacity below the number of items (query *count with out = NULL)");
  std::copy(src.begin(), src.end(), out);
  return RFA_OK;
}

rfa_moment_summary to_c(const rfa::HeadMoments& m, const rfa::MomentSummary& s) {
  rfa_moment_summary c{};
  c.queries = m.queries;
  c.keys = m.keys;
  c.var_q = s.var_q;
  c.var_k = s.var_k;
  c.tau_mean = s.tau_mean;
  c.tau_std = s.tau_std;
  c.tau_chi_mean = s.tau_chi_mean;
  c.logit_std = s.logit_std;
  c.logit_std_meanfield = s.logit_std_meanfield;
  c.dim_eff_u = s.dim_eff_u;
  c.dim_eff_n = s.dim_eff_n;
  return c;
}

}  // namespace

extern "C" {

void rfa_diagnostics_request_init(rfa_diagnostics_request* r) {
  if (!r) return;
  *r = rfa_diagnostics_request{};
  r->r1 = r->c1 = -1;
  r->alpha = 1.0;
  r->spectrum = 1;
}

rfa_status rfa_session_head_diagnostics(rfa_session* s, const rfa_diagnostics_request* req, rfa_diagnostics** out) {
  if (!s || !req || !out) return report_invalid("session, request or out is NULL");
  *out = nullptr;
  if (req->sweep_count < 0 || (req->sweep_count > 0 && !req->sweep))
    return report_invalid("sweep_count is negative, or sweep is NULL with sweep_count > 0");
  return guarded([&] {
    rfa::DiagnosticsRequest r;
    r.layer = req->layer, r.head = req->head, r.b = req->b;
    r.r0 = req->r0, r.r1 = req->r1, r.c0 = req->c0, r.c1 = req->c1;
    r.alpha = req->alpha;
    if (req->sweep_count > 0) r.sweep.assign(req->sweep, req->sweep + req->sweep_count);
    r.decayed = req->decayed != 0;
    r.spectrum = req->spectrum != 0;
    r.keep_tilts = req->keep_tilts != 0;
    auto d = rfa::Inspector(*rfa::capi::session_of(s)).head_diagnostics(r);
    if (!d) return report(d.status());
    *out = new rfa_diagnostics{d.take()};
    return RFA_OK;
  });
}

void rfa_diagnostics_destroy(rfa_diagnostics* d) { delete d; }

rfa_status rfa_diagnostics_get_summary(const rfa_diagnostics* h, rfa_diagnostics_summary* out) {
  if (!h || !out) return report_invalid("diagnostics or out is NULL");
  const rfa::HeadDiagnostics& d = h->d;
  rfa_diagnostics_summary c{};
  c.layer = d.layer, c.head = d.head, c.b = d.b;
  c.r0 = d.r0, c.r1 = d.r1, c.c0 = d.c0, c.c1 = d.c1;
  c.d = d.d;
  c.rows = (int)d.rows.size();
  c.singular_value_count = (int)d.singular_values.size();
  c.sweep_count = (int)d.sweep.size();
  c.alpha = d.alpha;
  c.entropy_mean = d.entropy_mean;
  c.max_weight_mean = d.max_weight_mean;
  c.erank = d.erank;
  c.rank = d.rank;
  c.nullity = d.nullity;
  c.moments = to_c(d.moments, d.summary);
  c.gpu_ms = d.timings.gpu_ms;
  c.svd_ms = d.timings.svd_ms;
  c.eigen_ms = d.timings.eigen_ms;
  c.host_ms = d.timings.host_ms;
  c.wall_ms = d.timings.wall_ms;
  *out = c;
  return RFA_OK;
}

rfa_status rfa_diagnostics_rows(const rfa_diagnostics* h, rfa_query_diagnostics* out, size_t capacity, size_t* count) {
  if (!h) return report_invalid("diagnostics is NULL");
  return guarded([&] {
    std::vector<rfa_query_diagnostics> rows;
    rows.reserve(h->d.rows.size());
    for (const rfa::QueryDiagnostics& q : h->d.rows)
      rows.push_back({q.position, q.keys, q.q_norm, q.tau, q.entropy, q.log_partition, q.max_weight, q.mean_s, q.var_s,
                      q.mean_logit, q.var_logit, q.expected_lag});
    return copy_out(rows, out, capacity, count);
  });
}

rfa_status rfa_diagnostics_array(const rfa_diagnostics* h, rfa_diagnostics_array_kind which, double* out,
                                 size_t capacity, size_t* count) {
  if (!h) return report_invalid("diagnostics is NULL");
  switch (which) {
    case RFA_DIAG_SINGULAR_VALUES: return copy_out(h->d.singular_values, out, capacity, count);
    case RFA_DIAG_TILT_SPECTRUM: return copy_out(h->d.summary.tilt_spectrum, out, capacity, count);
    case RFA_DIAG_NORMAL_SPECTRUM: return copy_out(h->d.summary.normal_spectrum, out, capacity, count);
    case RFA_DIAG_TILTS: return copy_out(h->d.tilts, out, capacity, count);
  }
  return report_invalid("which: not an rfa_diagnostics_array_kind");
}

rfa_status rfa_diagnostics_sweep(const rfa_diagnostics* h, rfa_sweep_point* out, size_t capacity, size_t* count) {
  if (!h) return report_invalid("diagnostics is NULL");
  return guarded([&] {
    std::vector<rfa_sweep_point> pts;
    for (const rfa::SweepPoint& p : h->d.sweep) pts.push_back({p.alpha, p.entropy, p.max_weight, p.erank, p.rank});
    return copy_out(pts, out, capacity, count);
  });
}

rfa_status rfa_diagnostics_sweep_singular_values(const rfa_diagnostics* h, int k, double* out, size_t capacity,
                                                 size_t* count) {
  if (!h) return report_invalid("diagnostics is NULL");
  if (k < 0 || k >= (int)h->d.sweep.size()) return report_invalid("k: sweep point out of range");
  return copy_out(h->d.sweep[(size_t)k].singular_values, out, capacity, count);
}

rfa_status rfa_diagnostics_pool(const rfa_diagnostics* const* list, int count, rfa_moment_summary* out) {
  if (!list || count < 1 || !out) return report_invalid("list, count (>= 1) or out");
  return guarded([&] {
    rfa::HeadMoments pooled;
    for (int i = 0; i < count; ++i) {
      if (!list[i]) return report_invalid("a NULL result in list");
      if (rfa::Status st = rfa::accumulate(pooled, list[i]->d.moments); !st.ok()) return report(st);
    }
    auto s = rfa::summarize(pooled);
    if (!s) return report(s.status());
    *out = to_c(pooled, *s);
    return RFA_OK;
  });
}

}  // extern "C"
