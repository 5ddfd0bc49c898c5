#include "reference/afa_ref.hpp"

#include "reference/afa_rows.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace rfa::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

cd cis(double angle) { return cd(std::cos(angle), std::sin(angle)); }

std::string hk(int h, int k) { return "[h=" + std::to_string(h) + "][k=" + std::to_string(k) + "]"; }

using detail::afa_at;
using detail::afa_bad;
Status bad(const std::string& msg) { return afa_bad(msg); }
size_t at(const AfaParams& p, int h, int k) { return afa_at(p, h, k); }
double sigmoid(double x) { return detail::afa_sigmoid(x); }
cd transport(const AfaParams& p, int h, int k, double lag) { return detail::afa_transport(p, h, k, lag); }
double time_of(const std::vector<double>& t, int N, int b, int i) { return detail::afa_time_of(t, N, b, i); }

double gamma2_of(const AfaParams& p, int h, int k) { return p.gamma2.empty() ? 0.0 : p.gamma2[at(p, h, k)]; }

Status check_vector(const AfaParams& p, const std::vector<double>& v, const char* name, bool may_be_empty) {
  const size_t HD = (size_t)p.heads * (size_t)p.dim;
  if (v.empty() && may_be_empty) return Status::Ok();
  if (v.size() != HD)
    return bad(std::string("params.") + name + " has " + std::to_string(v.size()) + " entries, heads*dim = " +
               std::to_string(HD));
  for (int h = 0; h < p.heads; ++h)
    for (int k = 0; k < p.dim; ++k)
      if (!std::isfinite(v[at(p, h, k)])) return bad(std::string("params.") + name + hk(h, k) + " is not finite");
  return Status::Ok();
}

Status check_nonneg(const AfaParams& p, const std::vector<double>& v, const char* name) {
  for (int h = 0; h < p.heads && !v.empty(); ++h)
    for (int k = 0; k < p.dim; ++k)
      if (v[at(p, h, k)] < 0.0)
        return bad(std::string("params.") + name + hk(h, k) + " = " + std::to_string(v[at(p, h, k)]) +
                   " is negative");
  return Status::Ok();
}

}  // namespace

namespace detail {

size_t afa_at(const AfaParams& p, int h, int k) { return (size_t)h * (size_t)p.dim + (size_t)k; }

double afa_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Status afa_bad(const std::string& msg) { return make_error(Code::invalid_argument, "afa reference: " + msg); }

// The unitary case scores phases only: each channel of Q and K is projected to unit modulus (a zero
// stays zero: it has no phase).
cd afa_scored(const AfaParams& p, cd z) {
  if (!p.unitary) return z;
  const double a = std::abs(z);
  return a > 0.0 ? z / a : cd(0.0, 0.0);
}

double afa_time_of(const std::vector<double>& t, int N, int b, int i) {
  return t.empty() ? (double)i : t[(size_t)b * (size_t)N + (size_t)i];
}

// e^{lambda_k l} for one channel, formed from the lag: the decay uses |l| (only non-causal layers
// see l < 0), the phase the signed lag.
cd afa_transport(const AfaParams& p, int h, int k, double lag) {
  return std::exp(-afa_mu(p, h, k) * std::fabs(lag)) * cis(p.omega[afa_at(p, h, k)] * lag);
}

Status afa_check_inputs(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                        const std::vector<cd>& V, const std::vector<double>& t) {
  RFA_TRY(afa_check_params(p));
  if (B < 0) return bad("B = " + std::to_string(B) + " is negative");
  if (N < 0) return bad("N = " + std::to_string(N) + " is negative");
  const size_t n = (size_t)B * (size_t)N * (size_t)p.heads * (size_t)p.dim;
  const std::pair<const std::vector<cd>*, const char*> zs[] = {{&Q, "Q"}, {&K, "K"}, {&V, "V"}};
  for (const auto& [z, name] : zs) {
    if (z->size() != n)
      return bad(std::string(name) + " holds " + std::to_string(z->size()) + " values, B*N*H*D = " + std::to_string(n));
    for (size_t x = 0; x < n; ++x)
      if (!std::isfinite((*z)[x].real()) || !std::isfinite((*z)[x].imag()))
        return make_error(Code::input_error,
                          std::string("afa reference: ") + name + "[b=" + std::to_string(x / ((size_t)N * p.heads * p.dim)) +
                              "][n=" + std::to_string(x / ((size_t)p.heads * p.dim) % (size_t)N) + "][h=" +
                              std::to_string(x / (size_t)p.dim % (size_t)p.heads) + "][d=" +
                              std::to_string(x % (size_t)p.dim) + "] is not finite");
  }
  if (!t.empty() && t.size() != (size_t)B * (size_t)N)
    return bad("t holds " + std::to_string(t.size()) + " timestamps, B*N = " + std::to_string((size_t)B * N) +
               " (or leave it empty)");
  for (int b = 0; b < B && !t.empty(); ++b)
    for (int i = 0; i < N; ++i) {
      const double ti = time_of(t, N, b, i);
      if (!std::isfinite(ti))
        return make_error(Code::input_error, "afa reference: t[b=" + std::to_string(b) + "][n=" + std::to_string(i) +
                                                 "] is not finite");
      if (p.causal && i > 0 && ti < time_of(t, N, b, i - 1))
        return make_error(Code::input_error, "afa reference: t[b=" + std::to_string(b) + "][n=" + std::to_string(i) +
                                                 "] decreases (a causal layer needs non-decreasing timestamps)");
    }
  return Status::Ok();
}

Status afa_check_horizon(double h, const std::string& where) {
  if (!std::isfinite(h) || h < 0.0) return bad(where + " = " + std::to_string(h) + " must be finite and >= 0");
  return Status::Ok();
}

// One query row of the memory-optimised form (docs/variant-afa.md §4): the softmax over the row of
// alpha^2 L, then every value transported to t_i by its own channel's e^{lambda_k (t_i - t_j)}.
void afa_softmax_row(const AfaParams& p, int h, const cd* q, double ti, int nk, const cd* K, const cd* V,
                     size_t stride, const double* tk, AfaRowOut* o) {
  const int D = p.dim;
  std::vector<double> logit((size_t)nk);
  double m = -kInf;
  for (int j = 0; j < nk; ++j) {
    logit[(size_t)j] = afa_pair_terms(p, h, q, K + (size_t)j * stride, ti, tk[j]).logit;
    m = std::fmax(m, logit[(size_t)j]);
  }
  // Softmax over the row. A logit of +inf (arg = 0: zero noise, eps = 0 and a key that matches the
  // query exactly) is the limit of an unbounded weight 1/(v + R2): such keys share the row equally.
  std::vector<double> w((size_t)nk, 0.0);
  double lse = -kInf;
  if (nk > 0 && m == kInf) {
    int count = 0;
    for (int j = 0; j < nk; ++j) count += logit[(size_t)j] == kInf;
    for (int j = 0; j < nk; ++j) w[(size_t)j] = logit[(size_t)j] == kInf ? 1.0 / count : 0.0;
    lse = kInf;
  } else if (nk > 0) {
    double l = 0.0;
    for (int j = 0; j < nk; ++j) l += std::exp(logit[(size_t)j] - m);
    for (int j = 0; j < nk; ++j) w[(size_t)j] = std::exp(logit[(size_t)j] - m) / l;
    lse = m + std::log(l);
  }
  o->row_max = m;
  o->row_lse = lse;
  if (o->attn)
    for (int j = 0; j < nk; ++j) o->attn[j] = w[(size_t)j];
  for (int k = 0; k < D; ++k) {
    cd acc(0.0, 0.0);
    for (int j = 0; j < nk; ++j) acc += w[(size_t)j] * transport(p, h, k, ti - tk[j]) * V[(size_t)j * stride + k];
    o->zbar[k] = acc;
  }
}

}  // namespace detail

Status afa_check_params(const AfaParams& p) {
  if (p.heads < 1) return bad("params.heads = " + std::to_string(p.heads) + " must be >= 1");
  if (p.dim < 1) return bad("params.dim = " + std::to_string(p.dim) + " must be >= 1");
  if (p.head.size() != (size_t)p.heads)
    return bad("params.head has " + std::to_string(p.head.size()) + " entries, heads = " + std::to_string(p.heads));
  RFA_TRY(check_vector(p, p.lambda_re, "lambda_re", false));
  RFA_TRY(check_vector(p, p.omega, "omega", false));
  RFA_TRY(check_vector(p, p.sigma2, "sigma2", false));
  RFA_TRY(check_vector(p, p.eta2, "eta2", false));
  RFA_TRY(check_vector(p, p.gamma2, "gamma2", true));
  for (int h = 0; h < p.heads; ++h)
    for (int k = 0; k < p.dim; ++k)
      if (p.lambda_re[at(p, h, k)] > 0.0)
        return bad("params.lambda_re" + hk(h, k) + " = " + std::to_string(p.lambda_re[at(p, h, k)]) +
                   " is positive (an eigenvalue must have Re(lambda) <= 0: a growing mode has no stationary covariance)");
  RFA_TRY(check_nonneg(p, p.sigma2, "sigma2"));
  RFA_TRY(check_nonneg(p, p.eta2, "eta2"));
  RFA_TRY(check_nonneg(p, p.gamma2, "gamma2"));
  if (p.mix) RFA_TRY(check_vector(p, p.delta, "delta", false));
  if (p.precision == AfaPrecision::weighted) {
    RFA_TRY(check_vector(p, p.weight, "weight", false));
    RFA_TRY(check_nonneg(p, p.weight, "weight"));
  }
  for (int h = 0; h < p.heads; ++h) {
    const AfaHeadParams& hp = p.head[(size_t)h];
    const std::string at_h = "params.head[" + std::to_string(h) + "].";
    if (!(std::isfinite(hp.nu) && hp.nu > 0.0)) return bad(at_h + "nu = " + std::to_string(hp.nu) + " must be > 0");
    if (!std::isfinite(hp.alpha)) return bad(at_h + "alpha is not finite");
    if (!(std::isfinite(hp.eps) && hp.eps >= 0.0)) return bad(at_h + "eps = " + std::to_string(hp.eps) + " must be >= 0");
    RFA_TRY(detail::afa_check_horizon(hp.pred_dt, at_h + "pred_dt"));
    if (p.precision == AfaPrecision::one_channel && (hp.precision_channel < 0 || hp.precision_channel >= p.dim))
      return bad(at_h + "precision_channel = " + std::to_string(hp.precision_channel) + " is not in [0, dim)");
    if (p.precision == AfaPrecision::weighted) {
      if (!(std::isfinite(hp.weight_bias) && hp.weight_bias >= 0.0))
        return bad(at_h + "weight_bias = " + std::to_string(hp.weight_bias) + " must be >= 0");
      double total = hp.weight_bias;
      for (int k = 0; k < p.dim; ++k) total += p.weight[at(p, h, k)];
      // Every weight zero would make the precision 0 and v^C infinite at every lag: no row is defined.
      if (!(total > 0.0)) return bad("params.weight[h=" + std::to_string(h) + "] and weight_bias are all zero");
    }
    // The full form divides by cov_k + eps: it must stay positive at every lag
    // (docs/variant-afa-full.md §2): at lag 0 it is eta2 + gamma2 + eps, far out sigma2 phi + gamma2 + eps (the eta2 term decays).
    for (int k = 0; p.full && k < p.dim; ++k) {
      const double g2 = gamma2_of(p, h, k), floor = g2 + hp.eps;
      if (!(p.eta2[at(p, h, k)] + floor > 0.0))
        return bad("params.eta2" + hk(h, k) + " + gamma2 + eps is 0: the full form's precision at lag 0 is infinite");
      if (!(p.sigma2[at(p, h, k)] > 0.0 || floor > 0.0 || afa_mu(p, h, k) == 0.0))
        return bad("params.sigma2" + hk(h, k) + " + gamma2 + eps is 0 on a decaying channel: the full form's "
                   "covariance tends to 0 with the lag (its precision to infinity)");
    }
  }
  if (p.full && p.precision != AfaPrecision::channel_sum)
    return bad("params.precision: the full form has per-channel precisions (use channel_sum)");
  if (p.irls_iterations < 1 || p.irls_iterations > kAfaMaxIrlsIterations)
    return bad("params.irls_iterations = " + std::to_string(p.irls_iterations) + " is not in [1, " +
               std::to_string(kAfaMaxIrlsIterations) + "]");
  if (!(std::isfinite(p.irls_momentum) && p.irls_momentum >= 0.0 && p.irls_momentum < 1.0))
    return bad("params.irls_momentum = " + std::to_string(p.irls_momentum) + " is not in [0, 1)");
  return Status::Ok();
}

Status afa_set_conjugate_pairs(AfaParams* p, const std::vector<double>& re_half, const std::vector<double>& omega_half) {
  if (p->heads < 1 || p->dim < 2 || p->dim % 2 != 0)
    return bad("conjugate pairs need heads >= 1 and an even dim >= 2 (dim = " + std::to_string(p->dim) + ")");
  const size_t half = (size_t)p->heads * (size_t)(p->dim / 2);
  if (re_half.size() != half) return bad("re_half holds " + std::to_string(re_half.size()) + " values, heads*dim/2 = " + std::to_string(half));
  if (omega_half.size() != half)
    return bad("omega_half holds " + std::to_string(omega_half.size()) + " values, heads*dim/2 = " + std::to_string(half));
  p->lambda_re.assign((size_t)p->heads * p->dim, 0.0);
  p->omega.assign((size_t)p->heads * p->dim, 0.0);
  for (int h = 0; h < p->heads; ++h)
    for (int m = 0; m < p->dim / 2; ++m) {
      const size_t src = (size_t)h * (p->dim / 2) + m;
      p->lambda_re[at(*p, h, 2 * m)] = p->lambda_re[at(*p, h, 2 * m + 1)] = re_half[src];
      p->omega[at(*p, h, 2 * m)] = omega_half[src];
      p->omega[at(*p, h, 2 * m + 1)] = -omega_half[src];
    }
  return Status::Ok();
}

double afa_mu(const AfaParams& p, int h, int k) { return p.unitary ? 0.0 : -p.lambda_re[at(p, h, k)]; }

AfaChannelKernel afa_channel_kernel(const AfaParams& p, int h, int k, double lag) {
  const double l = std::fabs(lag);
  const double mu = afa_mu(p, h, k);
  AfaChannelKernel c;
  c.E = std::exp(-mu * l);
  // phi = (1 - e^{-2 mu l}) / (2 mu) through expm1, which keeps full relative precision however
  // small 2 mu l is; its mu -> 0 limit (Brownian) is l, taken exactly at mu = 0 only.
  const double x = 2.0 * mu * l;
  c.phi = x == 0.0 ? l : -std::expm1(-x) / (2.0 * mu);
  c.cov = p.sigma2[at(p, h, k)] * c.phi + p.eta2[at(p, h, k)] * c.E * c.E + gamma2_of(p, h, k);
  c.P = c.cov > 0.0 ? 1.0 / c.cov : kInf;
  return c;
}

double afa_score_variance(const AfaParams& p, int h, double lag) {
  switch (p.precision) {
    case AfaPrecision::channel_sum: {
      double v = 0.0;
      for (int k = 0; k < p.dim; ++k) v += afa_channel_kernel(p, h, k, lag).cov;
      return v;
    }
    case AfaPrecision::one_channel:
      return afa_channel_kernel(p, h, p.head[(size_t)h].precision_channel, lag).cov;
    case AfaPrecision::weighted: {
      double prec = p.head[(size_t)h].weight_bias;
      for (int k = 0; k < p.dim; ++k) {
        const double w = p.weight[at(p, h, k)];
        if (w > 0.0) prec += w * afa_channel_kernel(p, h, k, lag).P;  // a zero weight ignores the channel (no 0 * inf)
      }
      return 1.0 / prec;  // +inf precision (a noiseless weighted channel) gives v^C = 0
    }
  }
  return 0.0;
}

AfaPairTerms afa_pair_terms(const AfaParams& p, int h, const cd* q, const cd* k, double t_i, double t_j) {
  const AfaHeadParams& hp = p.head[(size_t)h];
  AfaPairTerms r;
  r.lag = t_i - t_j;
  r.vC = afa_score_variance(p, h, r.lag);
  double R2 = 0.0;
  for (int c = 0; c < p.dim; ++c) {
    const cd qc = detail::afa_scored(p, q[c]);
    const cd kc = detail::afa_scored(p, k[c]);
    R2 += std::norm(transport(p, h, c, r.lag) * kc - qc);  // the key transported to t_i, minus the query
  }
  r.R2 = R2;
  r.arg = hp.nu * r.vC + R2 + hp.eps;
  r.L = -std::log(r.arg);
  const double a2 = hp.alpha * hp.alpha;
  r.logit = a2 == 0.0 ? 0.0 : a2 * r.L;  // alpha = 0: uniform weights, even where L is infinite
  return r;
}

Status afa_channel_info(const AfaParams& p, int h, std::vector<AfaChannelInfo>* info) {
  RFA_TRY(afa_check_params(p));
  if (h < 0 || h >= p.heads) return bad("head " + std::to_string(h) + " is not in [0, heads)");
  info->assign((size_t)p.dim, AfaChannelInfo{});
  for (int k = 0; k < p.dim; ++k) {
    AfaChannelInfo& c = (*info)[(size_t)k];
    const double mu = afa_mu(p, h, k);
    const double s2 = p.sigma2[at(p, h, k)];
    c.lambda_re = -mu;
    c.omega = p.omega[at(p, h, k)];
    c.time_constant = mu > 0.0 ? 1.0 / mu : kInf;
    c.period = c.omega != 0.0 ? 2.0 * kPi / std::fabs(c.omega) : kInf;
    c.stationary_var = mu > 0.0 ? s2 / (2.0 * mu) : (s2 > 0.0 ? kInf : 0.0);
    c.eta2 = p.eta2[at(p, h, k)];
    c.gamma2 = gamma2_of(p, h, k);
    c.alpha = c.eta2 - c.stationary_var;
    c.beta = c.gamma2 + c.stationary_var;
    c.regime = mu == 0.0 ? AfaRegime::brownian : (c.alpha > 0.0 ? AfaRegime::integrative : AfaRegime::diffusive);
    c.mix_gate = p.mix ? sigmoid(p.delta[at(p, h, k)]) : 1.0;
  }
  return Status::Ok();
}

Status afa_kernel_curves(const AfaParams& p, int h, const std::vector<double>& lags, AfaKernelCurves* c) {
  RFA_TRY(afa_check_params(p));
  if (h < 0 || h >= p.heads) return bad("head " + std::to_string(h) + " is not in [0, heads)");
  const size_t L = lags.size();
  *c = AfaKernelCurves{};
  c->lag = lags;
  c->E.assign((size_t)p.dim * L, 0.0);
  c->cov.assign((size_t)p.dim * L, 0.0);
  c->P.assign((size_t)p.dim * L, 0.0);
  c->score_var.assign(L, 0.0);
  c->score_bias.assign(L, 0.0);
  const AfaHeadParams& hp = p.head[(size_t)h];
  for (size_t x = 0; x < L; ++x) {
    for (int k = 0; k < p.dim; ++k) {
      const AfaChannelKernel ck = afa_channel_kernel(p, h, k, lags[x]);
      c->E[(size_t)k * L + x] = ck.E;
      c->cov[(size_t)k * L + x] = ck.cov;
      c->P[(size_t)k * L + x] = ck.P;
    }
    c->score_var[x] = afa_score_variance(p, h, lags[x]);
    const double a2 = hp.alpha * hp.alpha;
    c->score_bias[x] = a2 == 0.0 ? 0.0 : -a2 * std::log(hp.nu * c->score_var[x] + hp.eps);
  }
  return Status::Ok();
}

Status afa_row_diagnostics(const AfaParams& p, int B, int N, const std::vector<double>& t, const AfaOutputs& out,
                           AfaRowDiagnostics* d) {
  RFA_TRY(afa_check_params(p));
  const int H = p.heads, D = p.dim;
  const size_t rows = (size_t)B * H * N;
  if (out.B != B || out.N != N || out.H != H || out.D != D || out.attn.size() != rows * (size_t)N)
    return bad("row diagnostics need outputs of afa_forward with want_matrices and the same B, N, H, D");
  if (!t.empty() && t.size() != (size_t)B * (size_t)N) return bad("t must hold B*N timestamps (or be empty)");
  *d = AfaRowDiagnostics{};
  d->entropy.assign(rows, 0.0);
  d->max_weight.assign(rows, 0.0);
  d->expected_lag.assign(rows, 0.0);
  d->channel_mass.assign(rows * (size_t)D, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const size_t r = ((size_t)b * H + h) * N + i;
        const double ti = time_of(t, N, b, i);
        for (int j = 0; j < N; ++j) {
          const double w = out.attn[r * N + j];
          if (w <= 0.0) continue;
          const double lag = std::fabs(ti - time_of(t, N, b, j));
          d->entropy[r] -= w * std::log(w);
          d->max_weight[r] = std::fmax(d->max_weight[r], w);
          d->expected_lag[r] += w * lag;
          for (int k = 0; k < D; ++k) d->channel_mass[r * D + k] += w * std::exp(-afa_mu(p, h, k) * lag);
        }
      }
  return Status::Ok();
}

Status afa_pulled_forward(const AfaParams& p, int B, int N, const std::vector<cd>& V, const std::vector<double>& t,
                          int b, int h, int i, std::vector<cd>* out) {
  RFA_TRY(afa_check_params(p));
  const int H = p.heads, D = p.dim;
  if (V.size() != (size_t)B * N * H * D) return bad("V must hold B*N*H*D values");
  if (!t.empty() && t.size() != (size_t)B * (size_t)N) return bad("t must hold B*N timestamps (or be empty)");
  if (b < 0 || b >= B || h < 0 || h >= H || i < 0 || i >= N) return bad("pulled_forward: (b, h, i) out of range");
  out->assign((size_t)(i + 1) * D, cd(0, 0));
  const double ti = time_of(t, N, b, i);
  for (int j = 0; j <= i; ++j)
    for (int k = 0; k < D; ++k)
      (*out)[(size_t)j * D + k] =
          transport(p, h, k, ti - time_of(t, N, b, j)) * V[(((size_t)b * N + j) * H + h) * D + k];
  return Status::Ok();
}

Result<double> afa_basis_consistency(const std::vector<cd>& W_V, const std::vector<cd>& W_P, int dv, int de) {
  if (dv < 1 || de < 1) return bad("basis consistency: dv and de must be >= 1");
  if (W_V.size() != (size_t)dv * de) return bad("basis consistency: W_V must hold dv*de values");
  if (W_P.size() != (size_t)de * dv) return bad("basis consistency: W_P must hold de*dv values");
  double f = 0.0;
  for (int r = 0; r < dv; ++r)
    for (int c = 0; c < dv; ++c) {
      cd s(0, 0);
      for (int x = 0; x < de; ++x) s += W_V[(size_t)r * de + x] * W_P[(size_t)x * dv + c];
      if (r == c) s -= 1.0;
      f += std::norm(s);
    }
  return std::sqrt(f);
}

// An AFA layer's physical parameters in the AFA twin's form (docs/variant-afa.md §12).
AfaParams afa_twin_params(const AttentionParams& p) {
  const AfaLayerParams& f = p.afa;
  AfaParams a;
  a.heads = p.heads;
  a.dim = p.dim;
  a.lambda_re.resize(f.mu.size());
  for (size_t k = 0; k < f.mu.size(); ++k) a.lambda_re[k] = -f.mu[k];
  a.omega = p.omega;
  a.sigma2 = f.sigma2;
  a.eta2 = f.eta2;
  a.gamma2 = f.gamma2;
  a.delta = f.delta;
  a.weight = f.weight;
  a.head.resize((size_t)p.heads);
  for (int h = 0; h < p.heads; ++h) {
    AfaHeadParams& hp = a.head[(size_t)h];
    hp.nu = f.nu.empty() ? 1.0 : f.nu[(size_t)h];
    hp.alpha = f.alpha.empty() ? 1.0 : f.alpha[(size_t)h];
    hp.eps = f.eps;
    hp.pred_dt = f.pred_dt;
    hp.precision_channel = f.precision_channel;
    hp.weight_bias = f.weight_bias.empty() ? 0.0 : f.weight_bias[(size_t)h];
  }
  a.precision = f.precision;
  a.full = p.variant == AttentionVariant::afa_full;
  a.irls_iterations = f.irls_iterations;
  a.irls_momentum = f.irls_momentum;
  a.unitary = f.unitary;
  a.causal = p.sw.causal;
  a.mix = f.mix;
  return a;
}

}  // namespace rfa::ref
