// The host half of the tomography's per-head statistics (docs/DIAGNOSTICS.md §3): pooled moments of the
// tilts, radii, queries, keys and logits, and their summaries (tilt spectrum, effective angular
// dimension of the tilts and of the token-space normals, chi prediction of tau, mean-field logit
// spread). Plus the public wrappers of the linear algebra.
#include <algorithm>
#include <cmath>
#include <string>

#include "probe/linalg.hpp"
#include "rfa/diagnostics.hpp"

namespace rfa {

namespace {

void add_into(std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty()) a.assign(b.size(), 0.0);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] += b[i];
}

// Mean over dims of the per-dim population variance from per-dim sums.
double mean_variance(const std::vector<double>& sum, const std::vector<double>& sq, int64_t n) {
  if (n <= 0 || sum.empty()) return 0;
  double v = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    const double m = sum[i] / (double)n;
    v += std::max(sq[i] / (double)n - m * m, 0.0);
  }
  return v / (double)sum.size();
}

}  // namespace

Status accumulate(HeadMoments& into, const HeadMoments& more) {
  if (more.d == 0) return Status::Ok();
  if (into.d == 0) {
    into = more;
    return Status::Ok();
  }
  if (into.d != more.d || into.d_token != more.d_token || into.key_gram != more.key_gram)
    return Status(Code::invalid_argument, "accumulate: moments of different heads (d " + std::to_string(into.d) + " vs " +
                                              std::to_string(more.d) + ", or another key map)");
  into.queries += more.queries;
  into.keys += more.keys;
  into.logits += more.logits;
  add_into(into.uu, more.uu);
  add_into(into.uu0, more.uu0);
  add_into(into.q_sum, more.q_sum);
  add_into(into.q_sq, more.q_sq);
  add_into(into.k_sum, more.k_sum);
  add_into(into.k_sq, more.k_sq);
  into.tau_sum += more.tau_sum;
  into.tau_sq += more.tau_sq;
  into.logit_sum += more.logit_sum;
  into.logit_sq += more.logit_sq;
  return Status::Ok();
}

Result<MomentSummary> summarize(const HeadMoments& m) {
  MomentSummary s;
  const int d = m.d;
  if (d <= 0 || m.queries <= 0) return s;
  const size_t dd = (size_t)d * d;
  if (m.uu.size() != dd || m.uu0.size() != dd || m.q_sum.size() != (size_t)d || m.q_sq.size() != (size_t)d ||
      (!m.key_gram.empty() && m.key_gram.size() != dd))
    return Status(Code::invalid_argument, "summarize: moment arrays do not match d = " + std::to_string(d));
  const double nq = (double)m.queries;
  s.var_q = mean_variance(m.q_sum, m.q_sq, m.queries);
  s.var_k = mean_variance(m.k_sum, m.k_sq, m.keys);
  s.tau_mean = m.tau_sum / nq;
  s.tau_std = std::sqrt(std::max(m.tau_sq / nq - s.tau_mean * s.tau_mean, 0.0));
  // tau = |q| / sqrt(d) with q ~ N(0, var_q I_d): |q| / sqrt(var_q) is chi with d degrees of freedom.
  s.tau_chi_mean = std::sqrt(s.var_q / d) * std::sqrt(2.0) * std::exp(std::lgamma((d + 1) / 2.0) - std::lgamma(d / 2.0));
  if (m.logits > 0) {
    const double mean = m.logit_sum / (double)m.logits;
    s.logit_std = std::sqrt(std::max(m.logit_sq / (double)m.logits - mean * mean, 0.0));
  }
  s.logit_std_meanfield = std::sqrt(s.var_q * s.var_k);

  // C_u = E[u u^T] (uncentred, eq. 58; docs/DIAGNOSTICS.md §3 item 3).
  std::vector<double> cu(dd);
  for (size_t i = 0; i < dd; ++i) cu[i] = m.uu[i] / nq;
  auto ev = linalg::symmetric_eigen(cu, d);
  if (!ev) return ev.status();
  s.tilt_spectrum = ev.take();
  s.dim_eff_u = linalg::participation_ratio(s.tilt_spectrum);

  // C_n = E[n n^T] with n = W^T u0 (W: the d x d_token key map) is d_token x d_token, but its
  // non-zero eigenvalues are those of S G S with S = C_u0^{1/2} and G = W W^T (d x d): C_n = (S W)^T (S W)
  // and (S W)(S W)^T = S G S share them.
  if (!m.key_gram.empty()) {
    for (size_t i = 0; i < dd; ++i) cu[i] = m.uu0[i] / nq;
    std::vector<double> vec;
    auto e0 = linalg::symmetric_eigen(cu, d, &vec);
    if (!e0) return e0.status();
    std::vector<double> S(dd, 0.0), SG(dd, 0.0), M(dd, 0.0);
    for (int k = 0; k < d; ++k) {
      const double r = std::sqrt(std::max((*e0)[(size_t)k], 0.0));
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) S[(size_t)i * d + j] += r * vec[(size_t)k * d + i] * vec[(size_t)k * d + j];
    }
    for (int i = 0; i < d; ++i)
      for (int k = 0; k < d; ++k)
        for (int j = 0; j < d; ++j) SG[(size_t)i * d + j] += S[(size_t)i * d + k] * m.key_gram[(size_t)k * d + j];
    for (int i = 0; i < d; ++i)
      for (int k = 0; k < d; ++k)
        for (int j = 0; j < d; ++j) M[(size_t)i * d + j] += SG[(size_t)i * d + k] * S[(size_t)k * d + j];
    auto en = linalg::symmetric_eigen(M, d);
    if (!en) return en.status();
    s.normal_spectrum = en.take();
    s.dim_eff_n = linalg::participation_ratio(s.normal_spectrum);
  }
  return s;
}

Result<std::vector<double>> singular_values(const std::vector<double>& a, int rows, int cols) {
  return linalg::singular_values(a, rows, cols);
}
double effective_rank(const std::vector<double>& sv) { return linalg::effective_rank(sv); }
double participation_ratio(const std::vector<double>& ev) { return linalg::participation_ratio(ev); }

}  // namespace rfa
