#include "reference/readout_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace rfa::ref {

namespace {

Status bad(const std::string& what) { return make_error(Code::invalid_argument, "readout twin: " + what); }

Status check_row(int heads, int dim, int B, int N, size_t q_size, size_t k_size, const std::vector<double>& t,
                 int window, int b, int h, int i) {
  if (B < 1 || N < 1) return bad("B and N must be >= 1");
  const size_t n = (size_t)B * N * heads * dim;
  if (q_size != n || k_size != n) return bad("Q and K must hold B*N*H*D = " + std::to_string(n) + " values");
  if (!t.empty() && t.size() != (size_t)B * N) return bad("t must hold B*N timestamps (or be empty)");
  if (window < 0) return bad("window " + std::to_string(window) + " must be >= 0");
  if (b < 0 || b >= B || h < 0 || h >= heads || i < 0 || i >= N)
    return bad("(b, h, i) = (" + std::to_string(b) + ", " + std::to_string(h) + ", " + std::to_string(i) +
               ") out of range");
  return Status::Ok();
}

double time_at(const std::vector<double>& t, int N, int b, int i) { return t.empty() ? (double)i : t[(size_t)b * N + i]; }

// The keys row i attends to: j <= i within the window when causal, every position otherwise.
std::pair<int, int> key_range(bool causal, int window, int N, int i) {
  if (!causal) return {0, N};
  return {window > 0 ? std::max(0, i - window + 1) : 0, i + 1};
}

cd unit(cd z) {
  const double n = std::abs(z);
  return n > 0 ? z / n : cd(0, 0);
}

// u = q e^{-i omega t_i} / |q| (Re, Im per dim), zeros for a zero query.
std::vector<double> tilt(const cd* q, const double* omega, int D, double ti, double q_norm) {
  std::vector<double> u((size_t)2 * D, 0.0);
  if (!(q_norm > 0)) return u;
  for (int d = 0; d < D; ++d) {
    const cd z = q[d] * std::polar(1.0, -omega[d] * ti) / q_norm;
    u[(size_t)2 * d] = z.real();
    u[(size_t)2 * d + 1] = z.imag();
  }
  return u;
}

}  // namespace

Status afa_readout_row(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                       const std::vector<double>& t, int window, int b, int h, int i, ReadoutRow* out, int view) {
  RFA_TRY(afa_check_params(p));
  RFA_TRY(check_row(p.heads, p.dim, B, N, Q.size(), K.size(), t, window, b, h, i));
  if (!(view == kAllChannels || view == kReweighting || (view >= 0 && view < p.dim)))
    return bad("view " + std::to_string(view) + " is not a channel, kAllChannels or kReweighting");
  const int H = p.heads, D = p.dim;
  auto at = [&](const std::vector<cd>& z, int n) { return z.data() + (((size_t)b * N + n) * H + h) * D; };
  const double* omega = p.omega.data() + (size_t)h * D;
  // The scored query: per-channel unit modulus under the unitary switch, as afa_pair_terms uses it.
  std::vector<cd> q(at(Q, i), at(Q, i) + D);
  if (p.unitary)
    for (cd& z : q) z = unit(z);
  double qn = 0;
  for (const cd& z : q) qn += std::norm(z);
  qn = std::sqrt(qn);
  const double ti = time_at(t, N, b, i);
  *out = ReadoutRow{};
  out->i = i;
  out->q_norm = qn;
  out->u = tilt(q.data(), omega, D, ti, qn);
  const auto [j0, j1] = key_range(p.causal, window, N, i);
  // The full form's per-channel normalisers over the row, and their mean log.
  std::vector<AfaFullPairTerms> full((size_t)(p.full ? j1 - j0 : 0));
  std::vector<double> den((size_t)D, 0.0);
  double mean_log_den = 0;
  for (int j = j0; p.full && j < j1; ++j) {
    full[(size_t)(j - j0)] = afa_full_pair_terms(p, h, at(Q, i), at(K, j), ti, time_at(t, N, b, j));
    for (int c = 0; c < D; ++c) den[(size_t)c] += full[(size_t)(j - j0)].WP[(size_t)c];
  }
  for (int c = 0; p.full && c < D; ++c) mean_log_den += std::log(den[(size_t)c]) / D;
  for (int j = j0; j < j1; ++j) {
    const double tj = time_at(t, N, b, j), l = ti - tj;
    ReadoutKey k;
    k.j = j;
    k.lag = std::fabs(l);
    double cross = 0, mass = 0;
    for (int c = 0; c < D; ++c) {
      const cd kc = p.unitary ? unit(at(K, j)[c]) : at(K, j)[c];
      cross += (std::conj(q[(size_t)c]) * std::polar(1.0, omega[c] * l) * kc).real();
      if (view == kAllChannels || view == c) mass += std::exp(-afa_mu(p, h, c) * k.lag);
    }
    k.s = qn > 0 ? cross / qn : 0.0;
    if (!p.full) {
      k.logit = afa_pair_terms(p, h, at(Q, i), at(K, j), ti, tj).logit;
      k.decay = view == kReweighting ? 1.0 : view == kAllChannels ? mass / D : mass;
    } else {
      const AfaFullPairTerms& f = full[(size_t)(j - j0)];
      double w = 0, we = 0;
      for (int c = 0; c < D; ++c) {
        if (view != kAllChannels && view != c) continue;
        const double qc = den[(size_t)c] > 0 ? f.WP[(size_t)c] / den[(size_t)c] : 0.0;
        w += qc;
        we += qc * f.E[(size_t)c];
      }
      if (view == kReweighting) w = we = f.W;
      if (view == kAllChannels) w /= D, we /= D;
      k.logit = w > 0 ? std::log(w) + mean_log_den : -std::numeric_limits<double>::infinity();
      k.decay = w > 0 ? we / w : 0.0;
    }
    out->keys.push_back(k);
  }
  return Status::Ok();
}

Status rt_readout_row(const RtParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                      const std::vector<cd>& V, const std::vector<double>& t, int window, int b, int h, int i,
                      ReadoutRow* out) {
  RFA_TRY(check_row(p.heads, p.dim, B, N, Q.size(), K.size(), t, window, b, h, i));
  if (V.size() != Q.size()) return bad("V must hold as many values as Q");
  if (p.norm_scope != RtNormScope::per_head) return bad("only the per-head norm scope is read out");
  if ((int)p.head.size() != p.heads || (int)p.head[(size_t)h].omega.size() != p.dim)
    return bad("params.head must hold H heads of D frequencies");
  const int H = p.heads, D = p.dim;
  auto at = [&](const std::vector<cd>& z, int n) { return z.data() + (((size_t)b * N + n) * H + h) * D; };
  auto norm = [&](const cd* z) {
    double s = 0;
    for (int d = 0; d < D; ++d) s += std::norm(z[d]);
    return std::sqrt(s);
  };
  // Unit directions as the prologue forms them (docs/variant-rt.md §3.1): z / max(|z|, eps_norm).
  auto direction = [&](const cd* z) {
    const double s = std::max(norm(z), p.eps_norm);
    std::vector<cd> u(z, z + D);
    for (cd& x : u) x /= s;
    return u;
  };
  const double* omega = p.head[(size_t)h].omega.data();
  const std::vector<cd> qh = direction(at(Q, i));
  const double qn = norm(qh.data()), m_i = norm(at(V, i)), ti = time_at(t, N, b, i);
  *out = ReadoutRow{};
  out->i = i;
  out->q_norm = qn;
  out->u = tilt(qh.data(), omega, D, ti, qn);
  const auto [j0, j1] = key_range(p.causal, window, N, i);
  for (int j = j0; j < j1; ++j) {
    const std::vector<cd> kh = direction(at(K, j));
    const double l = ti - time_at(t, N, b, j);
    double R2 = 0, c = 0;
    for (int d = 0; d < D; ++d) {
      const cd moved = std::polar(1.0, omega[d] * l) * kh[(size_t)d];  // the key transported to t_i
      R2 += std::norm(qh[(size_t)d] - moved);
      c += (std::conj(qh[(size_t)d]) * moved).real();
    }
    const RtPairTerms pt = rt_pair_terms(p, h, m_i, norm(at(V, j)), std::fabs(l), R2);
    if (pt.log_P == -std::numeric_limits<double>::infinity()) continue;  // no direction: weight 0
    ReadoutKey k;
    k.j = j;
    k.logit = pt.logit;
    k.s = qn > 0 ? c / qn : 0.0;
    k.lag = std::fabs(l);
    k.decay = 1.0;
    out->keys.push_back(k);
  }
  return Status::Ok();
}

ReadoutStats readout_stats(const ReadoutRow& row, double alpha, int dim, const double thresholds[4]) {
  ReadoutStats r;
  r.keys = (int)row.keys.size();
  r.tau = row.q_norm / std::sqrt(2.0 * dim);
  if (row.keys.empty()) {
    r.log_partition = -std::numeric_limits<double>::infinity();
    return r;
  }
  double m = -std::numeric_limits<double>::infinity();
  for (const ReadoutKey& k : row.keys) m = std::max(m, alpha * k.logit);
  double l = 0;
  for (const ReadoutKey& k : row.keys) l += std::exp(alpha * k.logit - m);
  r.log_partition = m + std::log(l);
  double us = 0, us2 = 0;
  for (const ReadoutKey& k : row.keys) {
    const double x = alpha * k.logit - r.log_partition, p = std::exp(x);
    r.p.push_back(p);
    if (p > 0) r.entropy -= p * x;
    r.max_weight = std::max(r.max_weight, p);
    r.mean_s += p * k.s;
    r.mean_logit += p * k.logit;
    r.expected_lag += p * k.lag;
    r.decayed_lag += p * k.decay * k.lag;
    for (int x4 = 0; x4 < 4; ++x4)
      if (k.lag > thresholds[x4]) r.mass_beyond[x4] += p * k.decay;
    us += k.logit;
    us2 += k.logit * k.logit;
  }
  for (size_t x = 0; x < row.keys.size(); ++x) {
    r.var_s += r.p[x] * (row.keys[x].s - r.mean_s) * (row.keys[x].s - r.mean_s);
    r.var_logit += r.p[x] * (row.keys[x].logit - r.mean_logit) * (row.keys[x].logit - r.mean_logit);
  }
  r.uniform_mean = us / r.keys;
  r.uniform_var = std::max(0.0, us2 / r.keys - r.uniform_mean * r.uniform_mean);
  return r;
}

}  // namespace rfa::ref
