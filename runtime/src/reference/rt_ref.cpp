#include "reference/rt_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace rfa::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

cd cis(double angle) { return cd(std::cos(angle), std::sin(angle)); }

// The real inner product of R^{2n} written with complex numbers: sum_d Re(conj(a_d) b_d). The
// norm, the agreement and the tangent projection all use this one function, so that
// Re(vh^H vh) / |vh|^2 is exactly 1 when ubar == vh (the first position's T is then exactly 0).
double re_dot(const cd* a, const cd* b, int n) {
  double s = 0.0;
  for (int d = 0; d < n; ++d) s += a[d].real() * b[d].real() + a[d].imag() * b[d].imag();
  return s;
}

// log(e^u + e^v) for u, v in [-inf, +inf], never NaN.
double log_add_exp(double u, double v) {
  if (u == kInf || v == kInf) return kInf;
  if (u == -kInf) return v;
  if (v == -kInf) return u;
  const double hi = std::max(u, v), lo = std::min(u, v);
  return hi + std::log1p(std::exp(lo - hi));
}

std::string num(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

Status bad(const char* who, const std::string& what) {
  return make_error(Code::invalid_argument, std::string(who) + ": " + what);
}

// A non-negative finite value (or > 0 when strict).
Status check_value(const char* who, const std::string& name, double x, bool strict) {
  if (!std::isfinite(x) || x < 0.0 || (strict && x == 0.0))
    return bad(who, name + " = " + num(x) + ": must be finite and " + (strict ? "> 0" : ">= 0"));
  return Status::Ok();
}

Status check_params(const RtParams& p, const char* who) {
  if (p.heads < 1) return bad(who, "params.heads = " + std::to_string(p.heads) + ": must be >= 1");
  if (p.dim < 1) return bad(who, "params.dim = " + std::to_string(p.dim) + ": must be >= 1");
  if ((uint32_t)p.covariance > (uint32_t)RtCovariance::ou_rate) return bad(who, "params.covariance: unknown value");
  if ((uint32_t)p.kernel > (uint32_t)RtKernel::gaussian) return bad(who, "params.kernel: unknown value");
  if ((uint32_t)p.norm_scope > (uint32_t)RtNormScope::global) return bad(who, "params.norm_scope: unknown value");
  RFA_TRY(check_value(who, "params.eps_m2", p.eps_m2, false));
  RFA_TRY(check_value(who, "params.eps_norm", p.eps_norm, true));
  if (p.head.size() != (size_t)p.heads)
    return bad(who, "params.head has " + std::to_string(p.head.size()) + " entries, heads = " + std::to_string(p.heads));
  for (int h = 0; h < p.heads; ++h) {
    const RtHeadParams& hp = p.head[(size_t)h];
    const std::string at = "params.head[" + std::to_string(h) + "].";
    if (hp.omega.size() != (size_t)p.dim)
      return bad(who, at + "omega has " + std::to_string(hp.omega.size()) + " entries, dim = " + std::to_string(p.dim));
    for (int d = 0; d < p.dim; ++d)
      if (!std::isfinite(hp.omega[(size_t)d])) return bad(who, at + "omega[" + std::to_string(d) + "] is not finite");
    RFA_TRY(check_value(who, at + "mu", hp.mu, false));
    if (hp.mu_t) RFA_TRY(check_value(who, at + "mu_t", *hp.mu_t, false));
    RFA_TRY(check_value(who, at + "s2t", hp.s2t, false));
    RFA_TRY(check_value(who, at + "sigma2", hp.sigma2, false));
    RFA_TRY(check_value(who, at + "eta2", hp.eta2, false));
    RFA_TRY(check_value(who, at + "gamma2", hp.gamma2, false));
    RFA_TRY(check_value(who, at + "tau_th2", hp.tau_th2, true));
    if (p.kernel == RtKernel::student_t) RFA_TRY(check_value(who, at + "nu", hp.nu, true));
    RFA_TRY(check_value(who, at + "beta", hp.beta, true));
  }
  return Status::Ok();
}

// Every value finite; the error names the element as name[b][n][h][d] (N = 0: name[b][h][d], the
// decode step's one position per sequence).
Status check_finite(const char* who, const char* name, const std::vector<cd>& z, int N, int H, int D) {
  for (size_t idx = 0; idx < z.size(); ++idx)
    if (!std::isfinite(z[idx].real()) || !std::isfinite(z[idx].imag())) {
      const size_t d = idx % (size_t)D, h = idx / (size_t)D % (size_t)H, tok = idx / ((size_t)D * (size_t)H);
      const std::string pos = N > 0 ? "[" + std::to_string(tok / (size_t)N) + "][" + std::to_string(tok % (size_t)N) + "]"
                                    : "[" + std::to_string(tok) + "]";
      return make_error(Code::input_error, std::string(who) + ": " + name + pos + "[" + std::to_string(h) + "][" +
                                               std::to_string(d) + "] is not finite");
    }
  return Status::Ok();
}

const RtHeadParams& head_of(const RtParams& p, int h) { return p.head[(size_t)h]; }

// sigma_t^2: the tangential diffusion rate (2 mu_t s2t for the stationary covariance).
double tangential_rate(const RtParams& p, int h) {
  const RtHeadParams& hp = head_of(p, h);
  return p.covariance == RtCovariance::stationary ? 2.0 * rt_mu_t(p, h) * hp.s2t : hp.sigma2;
}

// The query-side angular variance a = S(0) / (m^2 + eps); 0 without query-side noise, whatever m.
double query_term(const RtParams& p, int h, double m2e) {
  const double s0 = rt_cov(p, h, 0.0);
  return s0 == 0.0 ? 0.0 : s0 / m2e;
}

// log P = -log( (a_i + tau_th2) + S(l) / ((m_j^2 + eps) e^{-2 mu l}) ), the key term taken in the
// log domain: log S(l) - log(m_j^2 + eps) + 2 mu l. Nothing here overflows: a lag that drives the
// key term past any float only drives log P towards -infinity.
double log_precision_core(const RtParams& p, int h, double a_i, double log_m2_j, double lag) {
  const RtHeadParams& hp = head_of(p, h);
  if (log_m2_j == -kInf) return -kInf;  // zero magnitude (eps = 0): no directional information
  const double log_query_floor = std::log(a_i + hp.tau_th2);                          // +inf when a_i is
  const double log_key = std::log(rt_cov(p, h, lag)) - log_m2_j + 2.0 * hp.mu * lag;  // -inf when S = 0
  return -log_add_exp(log_query_floor, log_key);
}

double robust_L(const RtParams& p, int h, double log_P, double d2) {
  if (p.kernel == RtKernel::gaussian) return log_P - d2;
  return log_P - rt_kappa(p, h) * std::log1p(d2 / head_of(p, h).nu);
}

// Prologue of one token (section 3.1): unit directions of its H*D-long q, k, v and, per head, the
// value magnitude m, log(m^2 + eps) and the angular variance a.
void prologue(const RtParams& p, const cd* q, const cd* k, const cd* v, cd* qh, cd* kh, cd* vh, double* m,
              double* log_m2, double* a) {
  const int H = p.heads, D = p.dim;
  auto normalise = [&](const cd* z, cd* zh, int n) {
    const double nz = std::sqrt(re_dot(z, z, n));
    const double s = std::max(nz, p.eps_norm);
    for (int d = 0; d < n; ++d) zh[d] = z[d] / s;
    return nz;
  };
  if (p.norm_scope == RtNormScope::per_head) {
    for (int h = 0; h < H; ++h) {
      normalise(q + h * D, qh + h * D, D);
      normalise(k + h * D, kh + h * D, D);
      m[h] = normalise(v + h * D, vh + h * D, D);
    }
  } else {
    normalise(q, qh, H * D);
    normalise(k, kh, H * D);
    const double mv = normalise(v, vh, H * D);
    for (int h = 0; h < H; ++h) m[h] = mv;
  }
  for (int h = 0; h < H; ++h) {
    const double m2e = m[h] * m[h] + p.eps_m2;
    log_m2[h] = std::log(m2e);
    a[h] = query_term(p, h, m2e);
  }
}

// The keys one query row sees.
struct KeySet {
  int n = 0;
  std::vector<const cd*> kh, vh;   // head slices
  std::vector<double> log_m2, t;
  std::vector<uint8_t> valid;
};

struct RowOut {
  cd* ubar = nullptr;  // D
  double row_max = -kInf, row_sum = 0.0, row_lse = -kInf;
  double* A = nullptr;  // n, optional
  double* log_P = nullptr;
  double* d2 = nullptr;
};

// One query row of head h (sections 3.2-3.4 up to the consensus). Every pair's decay, covariance
// and rotation come from its own lag; the softmax is formed from the whole row in double.
void attend_row(const RtParams& p, int h, const cd* qh, double a_i, double t_i, const KeySet& ks,
                std::vector<double>& logit, RowOut* ro) {
  const int D = p.dim;
  const RtHeadParams& hp = head_of(p, h);
  const int n = ks.n;
  logit.assign((size_t)n, -kInf);
  bool any = false;
  for (int j = 0; j < n; ++j) {
    if (!ks.valid[(size_t)j]) continue;
    const double rel = t_i - ks.t[(size_t)j];
    const double lag = std::fabs(rel);
    double R2 = 0.0;
    for (int d = 0; d < D; ++d) R2 += std::norm(qh[d] - cis(hp.omega[(size_t)d] * rel) * ks.kh[(size_t)j][d]);
    const double lp = log_precision_core(p, h, a_i, ks.log_m2[(size_t)j], lag);
    const double d2 = std::exp(lp) * R2;
    const double lg = hp.beta * robust_L(p, h, lp, d2);
    if (ro->log_P) {
      ro->log_P[j] = lp;
      ro->d2[j] = d2;
    }
    logit[(size_t)j] = lg;
    if (lg > -kInf) any = true;
  }
  for (int d = 0; d < D; ++d) ro->ubar[d] = cd(0.0, 0.0);
  if (!any) return;  // fully masked (or every key without precision): zeros, -inf statistics
  double mx = -kInf;
  for (int j = 0; j < n; ++j) mx = std::max(mx, logit[(size_t)j]);
  double l = 0.0;
  for (int j = 0; j < n; ++j)
    if (logit[(size_t)j] > -kInf) l += std::exp(logit[(size_t)j] - mx);
  ro->row_max = mx;
  ro->row_sum = l;
  ro->row_lse = mx + std::log(l);
  for (int j = 0; j < n; ++j) {
    if (!(logit[(size_t)j] > -kInf)) continue;
    const double a = std::exp(logit[(size_t)j] - mx) / l;
    if (ro->A) ro->A[j] = a;
    // Aggregation with counter-rotation: the unit value transported from t_j to t_i, no decay.
    const double rel = t_i - ks.t[(size_t)j];
    for (int d = 0; d < D; ++d) ro->ubar[d] += a * (cis(hp.omega[(size_t)d] * rel) * ks.vh[(size_t)j][d]);
  }
}

// Epilogue of one token (section 3.4): tangent projection against the token's own unit value
// (Algorithm 1's division by |V|^2 kept), the normalised estimate, and the row diagnostics.
void epilogue(const RtParams& p, const cd* vh, const cd* ubar, const double* m, cd* T, cd* u_star,
              double* concentration, double* agreement, double* angular_step) {
  const int H = p.heads, D = p.dim;
  auto project = [&](int off, int len) {
    const double vv = re_dot(vh + off, vh + off, len);
    const double coef = vv > 0.0 ? re_dot(vh + off, ubar + off, len) / vv : 0.0;
    for (int d = 0; d < len; ++d) T[off + d] = ubar[off + d] - coef * vh[off + d];
    const double un = std::sqrt(re_dot(ubar + off, ubar + off, len));
    for (int d = 0; d < len; ++d) u_star[off + d] = un > 0.0 ? ubar[off + d] / un : cd(0.0, 0.0);
  };
  if (p.norm_scope == RtNormScope::per_head) {
    for (int h = 0; h < H; ++h) project(h * D, D);
  } else {
    project(0, H * D);
  }
  for (int h = 0; h < H; ++h) {
    const cd* u = ubar + h * D;
    concentration[h] = std::sqrt(re_dot(u, u, D));
    agreement[h] = re_dot(vh + h * D, u, D);
    const double tn = std::sqrt(re_dot(T + h * D, T + h * D, D));
    const double m2e = m[h] * m[h] + p.eps_m2;
    angular_step[h] = tn == 0.0 ? 0.0 : tn / std::sqrt(m2e);
  }
}

void reset_outputs(RtOutputs* out, int B, int N, int H, int D, bool matrices) {
  RtOutputs& o = *out;
  o = RtOutputs{};
  o.B = B;
  o.N = N;
  o.H = H;
  o.D = D;
  const size_t nz = (size_t)B * N * H * D, tok = (size_t)B * N * H;
  o.q_hat.assign(nz, cd(0, 0));
  o.k_hat.assign(nz, cd(0, 0));
  o.v_hat.assign(nz, cd(0, 0));
  o.ubar.assign(nz, cd(0, 0));
  o.u_star.assign(nz, cd(0, 0));
  o.T.assign(nz, cd(0, 0));
  o.m.assign(tok, 0.0);
  o.log_m2.assign(tok, 0.0);
  o.angular_variance.assign(tok, 0.0);
  o.row_max.assign(tok, -kInf);
  o.row_sum.assign(tok, 0.0);
  o.row_lse.assign(tok, -kInf);
  o.concentration.assign(tok, 0.0);
  o.agreement.assign(tok, 0.0);
  o.angular_step.assign(tok, 0.0);
  if (matrices) {
    o.A.assign(tok * (size_t)N, 0.0);
    o.log_P.assign(tok * (size_t)N, -kInf);
    o.d2.assign(tok * (size_t)N, 0.0);
  }
}

}  // namespace

double rt_kappa(const RtParams& p, int h) { return (head_of(p, h).nu + p.dim) / p.dim; }

double rt_mu_t(const RtParams& p, int h) {
  const RtHeadParams& hp = head_of(p, h);
  return hp.mu_t ? *hp.mu_t : hp.mu;
}

double rt_cov(const RtParams& p, int h, double lag) {
  const RtHeadParams& hp = head_of(p, h);
  const double mt = rt_mu_t(p, h);
  const double e2 = std::exp(-2.0 * mt * lag);   // E_t^2
  const double one_minus = -std::expm1(-2.0 * mt * lag);  // 1 - E_t^2, exact at small mu_t lag
  const double meas = hp.eta2 * e2 + hp.gamma2;
  if (p.covariance == RtCovariance::stationary) return hp.s2t * one_minus + meas;
  // phi = (1 - E_t^2) / (2 mu_t); expm1 keeps it exact for any mu_t > 0, so only mu_t = 0 needs
  // its limit (Brownian growth, phi = lag).
  const double phi = mt == 0.0 ? lag : one_minus / (2.0 * mt);
  return hp.sigma2 * phi + meas;
}

double rt_log_precision(const RtParams& p, int h, double m_i, double m_j, double lag) {
  const double a_i = query_term(p, h, m_i * m_i + p.eps_m2);
  return log_precision_core(p, h, a_i, std::log(m_j * m_j + p.eps_m2), lag);
}

RtPairTerms rt_pair_terms(const RtParams& p, int h, double m_i, double m_j, double lag, double R2) {
  const RtHeadParams& hp = head_of(p, h);
  RtPairTerms r;
  r.lag = lag;
  r.E = std::exp(-hp.mu * lag);
  r.S0 = rt_cov(p, h, 0.0);
  r.S = rt_cov(p, h, lag);
  const double m2e_j = m_j * m_j + p.eps_m2;
  r.query_term = query_term(p, h, m_i * m_i + p.eps_m2);
  r.key_term = r.S / (m2e_j * r.E * r.E);
  r.log_P = rt_log_precision(p, h, m_i, m_j, lag);
  r.P = std::exp(r.log_P);
  r.R2 = R2;
  r.c = 1.0 - R2 / 2.0;
  r.d2 = r.P * R2;
  r.L = robust_L(p, h, r.log_P, r.d2);
  r.w = p.kernel == RtKernel::gaussian ? std::exp(-r.d2) : std::pow(1.0 + r.d2 / hp.nu, -rt_kappa(p, h));
  r.logit = hp.beta * r.L;
  r.validity = rt_validity(p, h, m_j, lag);
  return r;
}

double rt_validity(const RtParams& p, int h, double m_j, double lag) {
  return std::sqrt(tangential_rate(p, h) * lag) / m_j;
}

Status rt_attention(const RtParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                    const std::vector<cd>& V, const std::vector<double>& t, RtOutputs* out, const RtOptions& opt) {
  const char* who = "rt_attention";
  RFA_TRY(check_params(p, who));
  if (B < 0) return bad(who, "B = " + std::to_string(B) + ": must be >= 0");
  if (N < 0) return bad(who, "N = " + std::to_string(N) + ": must be >= 0");
  const int H = p.heads, D = p.dim;
  const size_t nz = (size_t)B * N * H * D;
  const std::pair<const char*, const std::vector<cd>*> ins[] = {{"Q", &Q}, {"K", &K}, {"V", &V}};
  for (const auto& [name, z] : ins) {
    if (z->size() != nz)
      return bad(who, std::string(name) + " holds " + std::to_string(z->size()) + " values, B*N*H*D = " +
                          std::to_string(nz));
    RFA_TRY(check_finite(who, name, *z, N, H, D));
  }
  if (!t.empty() && t.size() != (size_t)B * N)
    return bad(who, "t holds " + std::to_string(t.size()) + " timestamps, B*N = " + std::to_string((size_t)B * N) +
                        " (or pass none)");
  for (int b = 0; b < B && !t.empty(); ++b)
    for (int i = 0; i < N; ++i) {
      const double ti = t[(size_t)b * N + i];
      const std::string at = "t[" + std::to_string(b) + "][" + std::to_string(i) + "]";
      if (!std::isfinite(ti)) return make_error(Code::input_error, std::string(who) + ": " + at + " is not finite");
      if (p.causal && i > 0 && ti < t[(size_t)b * N + i - 1])
        return make_error(Code::input_error, std::string(who) + ": " + at + " = " + num(ti) +
                                                 " is earlier than its predecessor: a causal layer needs "
                                                 "non-decreasing timestamps");
    }
  if (opt.key_valid && opt.key_valid->size() != (size_t)B * N)
    return bad(who, "options.key_valid holds " + std::to_string(opt.key_valid->size()) + " flags, B*N = " +
                        std::to_string((size_t)B * N));
  if (opt.window < 0) return bad(who, "options.window is " + std::to_string(opt.window) + ", must be >= 0");
  if (opt.window > 0 && !p.causal) return bad(who, "options.window needs a causal layer (params.causal is false)");

  reset_outputs(out, B, N, H, D, opt.want_matrices);
  RtOutputs& o = *out;
  auto time_of = [&](int b, int i) { return t.empty() ? (double)i : t[(size_t)b * N + i]; };

  // Prologue, token by token.
  for (size_t tok = 0; tok < (size_t)B * N; ++tok) {
    const size_t z = tok * H * D, s = tok * H;
    prologue(p, &Q[z], &K[z], &V[z], &o.q_hat[z], &o.k_hat[z], &o.v_hat[z], &o.m[s], &o.log_m2[s],
             &o.angular_variance[s]);
  }

  KeySet ks;
  ks.n = N;
  ks.kh.resize((size_t)N);
  ks.vh.resize((size_t)N);
  ks.log_m2.resize((size_t)N);
  ks.t.resize((size_t)N);
  ks.valid.resize((size_t)N);
  std::vector<double> logit;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < N; ++j) {
        const size_t tok = (size_t)b * N + j;
        ks.kh[(size_t)j] = &o.k_hat[(tok * H + h) * D];
        ks.vh[(size_t)j] = &o.v_hat[(tok * H + h) * D];
        ks.log_m2[(size_t)j] = o.log_m2[tok * H + h];
        ks.t[(size_t)j] = time_of(b, j);
      }
      for (int i = 0; i < N; ++i) {
        for (int j = 0; j < N; ++j) {
          bool ok = !(p.causal && j > i) && !(opt.window > 0 && i - j >= opt.window);
          if (opt.key_valid && !(*opt.key_valid)[(size_t)b * N + j]) ok = false;
          ks.valid[(size_t)j] = ok;
        }
        const size_t tok = (size_t)b * N + i, r = ((size_t)b * H + h) * N + i;
        RowOut ro;
        ro.ubar = &o.ubar[(tok * H + h) * D];
        if (opt.want_matrices) {
          ro.A = &o.A[r * N];
          ro.log_P = &o.log_P[r * N];
          ro.d2 = &o.d2[r * N];
        }
        attend_row(p, h, &o.q_hat[(tok * H + h) * D], o.angular_variance[tok * H + h], time_of(b, i), ks, logit, &ro);
        o.row_max[r] = ro.row_max;
        o.row_sum[r] = ro.row_sum;
        o.row_lse[r] = ro.row_lse;
      }
    }

  // Epilogue, token by token (the global scope projects over all heads at once).
  std::vector<double> conc((size_t)H), agr((size_t)H), step((size_t)H);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) {
      const size_t tok = (size_t)b * N + i, z = tok * H * D;
      epilogue(p, &o.v_hat[z], &o.ubar[z], &o.m[tok * H], &o.T[z], &o.u_star[z], conc.data(), agr.data(), step.data());
      for (int h = 0; h < H; ++h) {
        const size_t r = ((size_t)b * H + h) * N + i;
        o.concentration[r] = conc[(size_t)h];
        o.agreement[r] = agr[(size_t)h];
        o.angular_step[r] = step[(size_t)h];
      }
    }
  return Status::Ok();
}

Status rt_decode_init(const RtParams& p, int B, RtDecodeState* st) {
  const char* who = "rt_decode_init";
  RFA_TRY(check_params(p, who));
  if (!p.causal) return bad(who, "params.causal = false: a decode step needs a causal layer");
  if (B < 1) return bad(who, "B = " + std::to_string(B) + ": must be >= 1");
  *st = RtDecodeState{};
  st->B = B;
  st->H = p.heads;
  st->D = p.dim;
  return Status::Ok();
}

Status rt_decode_step(const RtParams& p, RtDecodeState* st, const std::vector<cd>& q, const std::vector<cd>& k,
                      const std::vector<cd>& v, const std::vector<double>& t_new, RtOutputs* out) {
  const char* who = "rt_decode_step";
  RFA_TRY(check_params(p, who));
  if (!p.causal) return bad(who, "params.causal = false: a decode step needs a causal layer");
  const int B = st->B, H = p.heads, D = p.dim, len = st->len;
  if (B < 1 || st->H != H || st->D != D)
    return bad(who, "state: B, H, D = " + std::to_string(B) + ", " + std::to_string(st->H) + ", " +
                        std::to_string(st->D) + " do not match params (heads " + std::to_string(H) + ", dim " +
                        std::to_string(D) + "); call rt_decode_init");
  const size_t per = (size_t)B * H * D;
  if (st->k_hat.size() != (size_t)len * per || st->v_hat.size() != (size_t)len * per ||
      st->log_m2.size() != (size_t)len * B * H || st->t.size() != (size_t)len * B)
    return bad(who, "state: cache sizes do not match len = " + std::to_string(len));
  const std::pair<const char*, const std::vector<cd>*> ins[] = {{"q", &q}, {"k", &k}, {"v", &v}};
  for (const auto& [name, z] : ins) {
    if (z->size() != per)
      return bad(who, std::string(name) + " holds " + std::to_string(z->size()) + " values, B*H*D = " +
                          std::to_string(per));
    RFA_TRY(check_finite(who, name, *z, 0, H, D));
  }
  if (t_new.size() != (size_t)B)
    return bad(who, "t_new holds " + std::to_string(t_new.size()) + " timestamps, B = " + std::to_string(B));
  for (int b = 0; b < B; ++b) {
    const std::string at = "t_new[" + std::to_string(b) + "]";
    if (!std::isfinite(t_new[(size_t)b]))
      return make_error(Code::input_error, std::string(who) + ": " + at + " is not finite");
    if (len > 0 && t_new[(size_t)b] < st->t[(size_t)(len - 1) * B + b])
      return make_error(Code::input_error, std::string(who) + ": " + at + " = " + num(t_new[(size_t)b]) +
                                               " is earlier than the cached position's " +
                                               num(st->t[(size_t)(len - 1) * B + b]));
  }

  reset_outputs(out, B, 1, H, D, false);
  RtOutputs& o = *out;
  // Prologue of the new token, appended to the cache (it is its own newest key).
  st->k_hat.resize((size_t)(len + 1) * per);
  st->v_hat.resize((size_t)(len + 1) * per);
  st->log_m2.resize((size_t)(len + 1) * B * H);
  st->t.resize((size_t)(len + 1) * B);
  for (int b = 0; b < B; ++b) {
    const size_t z = (size_t)b * H * D, s = (size_t)b * H;
    prologue(p, &q[z], &k[z], &v[z], &o.q_hat[z], &o.k_hat[z], &o.v_hat[z], &o.m[s], &o.log_m2[s],
             &o.angular_variance[s]);
    std::copy(o.k_hat.begin() + (long)z, o.k_hat.begin() + (long)(z + (size_t)H * D),
              st->k_hat.begin() + (long)((size_t)len * per + z));
    std::copy(o.v_hat.begin() + (long)z, o.v_hat.begin() + (long)(z + (size_t)H * D),
              st->v_hat.begin() + (long)((size_t)len * per + z));
    for (int h = 0; h < H; ++h) st->log_m2[((size_t)len * B + b) * H + h] = o.log_m2[s + h];
    st->t[(size_t)len * B + b] = t_new[(size_t)b];
  }
  st->len = len + 1;

  KeySet ks;
  ks.n = len + 1;
  ks.kh.resize((size_t)ks.n);
  ks.vh.resize((size_t)ks.n);
  ks.log_m2.resize((size_t)ks.n);
  ks.t.resize((size_t)ks.n);
  ks.valid.assign((size_t)ks.n, 1);
  std::vector<double> logit;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j <= len; ++j) {
        ks.kh[(size_t)j] = &st->k_hat[(size_t)j * per + ((size_t)b * H + h) * D];
        ks.vh[(size_t)j] = &st->v_hat[(size_t)j * per + ((size_t)b * H + h) * D];
        ks.log_m2[(size_t)j] = st->log_m2[((size_t)j * B + b) * H + h];
        ks.t[(size_t)j] = st->t[(size_t)j * B + b];
      }
      const size_t r = (size_t)b * H + h;
      RowOut ro;
      ro.ubar = &o.ubar[r * D];
      attend_row(p, h, &o.q_hat[r * D], o.angular_variance[r], t_new[(size_t)b], ks, logit, &ro);
      o.row_max[r] = ro.row_max;
      o.row_sum[r] = ro.row_sum;
      o.row_lse[r] = ro.row_lse;
    }
  for (int b = 0; b < B; ++b) {
    const size_t z = (size_t)b * H * D;
    epilogue(p, &o.v_hat[z], &o.ubar[z], &o.m[(size_t)b * H], &o.T[z], &o.u_star[z], &o.concentration[(size_t)b * H],
             &o.agreement[(size_t)b * H], &o.angular_step[(size_t)b * H]);
  }
  return Status::Ok();
}

Status rt_residual(const RtParams& p, const RtBlockWeights& w, int B, int N, const std::vector<double>& Z,
                   const std::vector<cd>& T, std::vector<double>* Z_plus, std::vector<double>* U_plus) {
  const char* who = "rt_residual";
  RFA_TRY(check_params(p, who));
  if (B < 0 || N < 0) return bad(who, "B and N must be >= 0");
  const int H = p.heads, D = p.dim, dm = w.d_model;
  if (dm < 1) return bad(who, "weights.d_model = " + std::to_string(dm) + ": must be >= 1");
  const size_t rows = (size_t)B * N, in = 2 * (size_t)H * D;
  if (w.W_o.size() != (size_t)dm * in)
    return bad(who, "weights.W_o holds " + std::to_string(w.W_o.size()) + " values, d_model * 2HD = " +
                        std::to_string((size_t)dm * in));
  if (!w.b_o.empty() && w.b_o.size() != (size_t)dm)
    return bad(who, "weights.b_o holds " + std::to_string(w.b_o.size()) + " values, d_model = " + std::to_string(dm));
  if (!w.rms_gain.empty() && w.rms_gain.size() != (size_t)dm)
    return bad(who, "weights.rms_gain holds " + std::to_string(w.rms_gain.size()) + " values, d_model = " +
                        std::to_string(dm));
  RFA_TRY(check_value(who, "weights.rms_eps", w.rms_eps, false));
  if (Z.size() != rows * dm)
    return bad(who, "Z holds " + std::to_string(Z.size()) + " values, B*N*d_model = " + std::to_string(rows * dm));
  if (T.size() != rows * H * D)
    return bad(who, "T holds " + std::to_string(T.size()) + " values, B*N*H*D = " + std::to_string(rows * H * D));
  Z_plus->assign(rows * dm, 0.0);
  U_plus->assign(rows * dm, 0.0);
  std::vector<double> x(in);
  for (size_t r = 0; r < rows; ++r) {
    // W_o input: the RFA half-split packing [Re T (head-major) | Im T].
    for (size_t e = 0; e < (size_t)H * D; ++e) {
      x[e] = T[r * H * D + e].real();
      x[(size_t)H * D + e] = T[r * H * D + e].imag();
    }
    double ms = 0.0;
    for (int o = 0; o < dm; ++o) {
      double acc = 0.0;
      for (size_t e = 0; e < in; ++e) acc += w.W_o[(size_t)o * in + e] * x[e];
      const double zp = Z[r * dm + o] + (acc + (w.b_o.empty() ? 0.0 : w.b_o[(size_t)o]));
      (*Z_plus)[r * dm + o] = zp;
      ms += zp * zp;
    }
    const double inv = 1.0 / std::sqrt(ms / dm + w.rms_eps);
    for (int o = 0; o < dm; ++o)
      (*U_plus)[r * dm + o] = (*Z_plus)[r * dm + o] * inv * (w.rms_gain.empty() ? 1.0 : w.rms_gain[(size_t)o]);
  }
  return Status::Ok();
}

RtHeadSummary rt_head_summary(const RtParams& p, int h) {
  const RtHeadParams& hp = head_of(p, h);
  const double mt = rt_mu_t(p, h);
  RtHeadSummary s;
  s.kappa = rt_kappa(p, h);
  s.S0 = rt_cov(p, h, 0.0);
  s.sigma_t2 = tangential_rate(p, h);
  if (s.sigma_t2 == 0.0) {
    s.m_min = 0.0;
  } else {
    s.m_min = hp.mu == 0.0 ? kInf : std::sqrt(s.sigma_t2 * (2.0 * p.dim - 1.0) / hp.mu);
  }
  s.alibi_slope = 2.0 * hp.mu * hp.beta;
  const bool brownian = mt == 0.0;
  if (p.covariance == RtCovariance::stationary) {
    s.stationary_variance = hp.s2t;
  } else {
    s.stationary_variance = brownian ? kInf : hp.sigma2 / (2.0 * mt);
  }
  s.alpha = hp.eta2 - s.stationary_variance;
  s.beta_reg = hp.gamma2 + s.stationary_variance;
  s.regime = brownian ? "brownian" : (s.alpha > 0 ? "integrative" : "diffusive");
  return s;
}

std::vector<double> rt_precision_kernel(const RtParams& p, int h, double m, const std::vector<double>& lags) {
  std::vector<double> out(lags.size());
  for (size_t k = 0; k < lags.size(); ++k) out[k] = rt_log_precision(p, h, m, m, lags[k]);
  return out;
}

RtParams rt_twin_params(const AttentionParams& p) {
  const RtLayerParams& r = p.rt;
  RtParams t;
  t.heads = p.heads;
  t.dim = p.dim;
  t.covariance = r.covariance;
  t.kernel = r.kernel;
  t.norm_scope = RtNormScope::per_head;
  t.causal = p.sw.causal;
  t.eps_m2 = r.eps;
  t.head.resize((size_t)p.heads);
  for (size_t h = 0; h < (size_t)p.heads; ++h) {
    RtHeadParams& hp = t.head[h];
    hp.mu = r.mu[h];
    hp.s2t = r.s2t[h];
    hp.sigma2 = r.sigma2[h];
    hp.eta2 = r.eta2[h];
    hp.gamma2 = r.gamma2[h];
    hp.tau_th2 = r.tau_th2[h];
    hp.nu = r.nu[h];
    hp.beta = r.beta[h];
    hp.omega.assign(p.omega.begin() + (long)(h * p.dim), p.omega.begin() + (long)((h + 1) * p.dim));
  }
  return t;
}

}  // namespace rfa::ref
