#include "model/physics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rfa::physics {

double torch_softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double torch_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

namespace {
// Frequencies: conjugate pairs interleaved along d (docs/reference-code.md §2), RFA's rule, which
// AFA layers share (docs/variant-afa.md §12). `w` is [H * D/2] or [H * D]. zero_rotations zeroes
// omega_v at initialisation; the reference never zeroes it in forward(), so with learn_rotations
// the stored (learned from zero) values are used.
double omega_of(const ReferenceArgs& a, const std::vector<double>& w, int D, int h, int d) {
  const bool zeroed = a.zero_rotations && !a.learn_rotations;
  double x;
  if (a.use_complex_conj_constraint) {
    x = w[(size_t)h * (size_t)(D / 2) + (size_t)(d / 2)];
    if (d % 2) x = -x;
  } else {
    x = w[(size_t)h * (size_t)D + (size_t)d];
  }
  return zeroed ? 0.0 : x * a.omega_rescale;
}
}  // namespace

Result<AttentionParams> afa_physical_params(const ModelConfig& cfg, const RawAfaParams& raw) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim();
  const size_t HD = (size_t)H * D, W = (size_t)H * (a.use_complex_conj_constraint ? D / 2 : D);
  auto need = [&](const std::vector<double>& v, size_t n, const char* what) -> Status {
    if (v.size() == n) return Status::Ok();
    return make_error(Code::invalid_argument, std::string("afa_physical_params: ") + what + ": " +
                                                  std::to_string(n) + " values expected, " +
                                                  std::to_string(v.size()) + " given");
  };
  RFA_TRY(need(raw.omega_v, W, "omega_v"));
  RFA_TRY(need(raw.afa_mu_v, W, "afa_mu_v"));
  for (auto [v, name] : {std::pair{&raw.afa_sigma_v, "afa_sigma_v"}, {&raw.afa_eta_v, "afa_eta_v"},
                         {&raw.afa_gamma_v, "afa_gamma_v"}})
    RFA_TRY(need(*v, HD, name));
  RFA_TRY(need(raw.afa_nu_v, (size_t)H, "afa_nu_v"));
  RFA_TRY(need(raw.afa_alpha_v, (size_t)H, "afa_alpha_v"));
  if (cfg.afa_mix) RFA_TRY(need(raw.afa_delta_v, HD, "afa_delta_v"));
  const bool weighted = cfg.afa_precision == AfaPrecision::weighted;
  if (weighted) {
    RFA_TRY(need(raw.afa_weight_v, HD, "afa_weight_v"));
    RFA_TRY(need(raw.afa_weight_bias_v, (size_t)H, "afa_weight_bias_v"));
  }
  AttentionParams out;
  out.variant = AttentionVariant::afa;
  out.heads = H;
  out.dim = D;
  out.head.assign((size_t)H, HeadParams{});
  out.sw.causal = a.causal;
  AfaLayerParams& f = out.afa;
  f.precision = cfg.afa_precision;
  f.precision_channel = cfg.afa_precision_channel;
  f.unitary = cfg.afa_unitary;
  f.mix = cfg.afa_mix;
  f.eps = cfg.afa_eps;
  f.pred_dt = cfg.afa_pred_dt;
  // The decay scale: RFA's learned-decay scale, so both cover the same time constants.
  const double scale = a.scale_decay_by_time_interval ? a.max_learned_decay / (double)(a.seq_len - 1)
                                                      : a.max_learned_decay;
  out.omega.assign(HD, 0.0);
  f.mu.assign(HD, 0.0);
  f.sigma2.assign(HD, 0.0);
  f.eta2.assign(HD, 0.0);
  f.gamma2.assign(HD, 0.0);
  for (int h = 0; h < H; ++h)
    for (int d = 0; d < D; ++d) {
      const size_t k = (size_t)h * D + (size_t)d;
      out.omega[k] = omega_of(a, raw.omega_v, D, h, d);
      const size_t m = a.use_complex_conj_constraint ? (size_t)h * (size_t)(D / 2) + (size_t)(d / 2) : k;
      f.mu[k] = scale * torch_sigmoid(raw.afa_mu_v[m]);  // a conjugate pair shares its decay
      f.sigma2[k] = a.zero_process_noise ? 0.0 : torch_softplus(raw.afa_sigma_v[k]);
      f.eta2[k] = a.zero_key_measurement_noise ? 0.0 : torch_softplus(raw.afa_eta_v[k]);
      f.gamma2[k] = torch_softplus(raw.afa_gamma_v[k]);
    }
  f.nu.resize((size_t)H);
  f.alpha = raw.afa_alpha_v;
  for (int h = 0; h < H; ++h) f.nu[(size_t)h] = torch_softplus(raw.afa_nu_v[(size_t)h]);
  if (cfg.afa_mix) f.delta = raw.afa_delta_v;
  // head[]: the RFA head each AFA head reduces to with one decay (docs/variant-afa.md §9): mean
  // decay, summed noises, nu, tau = alpha^2. Summaries and regimes only; no kernel reads it.
  out.sw.cov_floor = 0.0;
  for (int h = 0; h < H; ++h) {
    HeadParams& hp = out.head[(size_t)h];
    for (int d = 0; d < D; ++d) {
      const size_t k = (size_t)h * D + (size_t)d;
      hp.mu += (cfg.afa_unitary ? 0.0 : f.mu[k]) / D;
      hp.sigma2 += f.sigma2[k];
      hp.eta2 += f.eta2[k];
      hp.gamma2 += f.gamma2[k];
    }
    hp.nu = f.nu[(size_t)h];
    hp.tau = f.alpha[(size_t)h] * f.alpha[(size_t)h];
  }
  if (weighted) {
    f.weight.resize(HD);
    f.weight_bias.resize((size_t)H);
    for (size_t k = 0; k < HD; ++k) f.weight[k] = torch_softplus(raw.afa_weight_v[k]);
    for (int h = 0; h < H; ++h) f.weight_bias[(size_t)h] = torch_softplus(raw.afa_weight_bias_v[(size_t)h]);
  }
  return out;
}

Result<AttentionParams> rt_physical_params(const ModelConfig& cfg, const RawRtParams& raw) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim();
  const size_t W = (size_t)H * (a.use_complex_conj_constraint ? D / 2 : D);
  auto need = [&](const std::vector<double>& v, size_t n, const char* what) -> Status {
    if (v.size() == n) return Status::Ok();
    return make_error(Code::invalid_argument, std::string("rt_physical_params: ") + what + ": " + std::to_string(n) +
                                                  " values expected, " + std::to_string(v.size()) + " given");
  };
  RFA_TRY(need(raw.omega_v, W, "omega_v"));
  for (auto [v, name] : {std::pair{&raw.rt_mu_v, "rt_mu_v"}, {&raw.rt_sigma_v, "rt_sigma_v"}, {&raw.rt_eta_v, "rt_eta_v"},
                         {&raw.rt_gamma_v, "rt_gamma_v"}, {&raw.rt_tau_th_v, "rt_tau_th_v"}, {&raw.rt_nu_v, "rt_nu_v"},
                         {&raw.rt_beta_v, "rt_beta_v"}})
    RFA_TRY(need(*v, (size_t)H, name));
  AttentionParams out;
  out.variant = AttentionVariant::rt;
  out.heads = H;
  out.dim = D;
  out.head.assign((size_t)H, HeadParams{});
  out.sw.causal = a.causal;
  out.sw.cov_floor = 0.0;
  RtLayerParams& r = out.rt;
  r.covariance = cfg.rt_covariance;
  r.kernel = cfg.rt_kernel;
  r.eps = cfg.rt_eps;
  const double scale = a.scale_decay_by_time_interval ? a.max_learned_decay / (double)(a.seq_len - 1)
                                                      : a.max_learned_decay;
  out.omega.assign((size_t)H * D, 0.0);
  for (int h = 0; h < H; ++h) {
    for (int d = 0; d < D; ++d) out.omega[(size_t)h * D + (size_t)d] = omega_of(a, raw.omega_v, D, h, d);
    const size_t i = (size_t)h;
    const double noise = a.zero_process_noise ? 0.0 : torch_softplus(raw.rt_sigma_v[i]);
    r.mu.push_back(scale * torch_sigmoid(raw.rt_mu_v[i]));
    r.s2t.push_back(cfg.rt_covariance == RtCovariance::stationary ? noise : 0.0);
    r.sigma2.push_back(cfg.rt_covariance == RtCovariance::ou_rate ? noise : 0.0);
    r.eta2.push_back(a.zero_key_measurement_noise ? 0.0 : torch_softplus(raw.rt_eta_v[i]));
    r.gamma2.push_back(torch_softplus(raw.rt_gamma_v[i]));
    r.tau_th2.push_back(torch_softplus(raw.rt_tau_th_v[i]) + 1e-6);
    r.nu.push_back(D * torch_softplus(raw.rt_nu_v[i]) + 2.0);
    r.beta.push_back(torch_softplus(raw.rt_beta_v[i]));
    // head[]: the noise parameters in RFA's places, for summaries and regimes (docs/variant-rt.md §10).
    HeadParams& hp = out.head[i];
    hp.mu = r.mu.back();
    hp.s2t = r.s2t.back();
    hp.sigma2 = r.sigma2.back();
    hp.eta2 = r.eta2.back();
    hp.gamma2 = r.gamma2.back();
    hp.nu = r.nu.back();
    hp.kappa = (hp.nu + D) / D;
    hp.tau = r.beta.back();
  }
  out.sw.covariance = cfg.rt_covariance == RtCovariance::stationary ? Covariance::stationary : Covariance::ou_rate;
  return out;
}

AfaChannelDerived afa_channel_derived(const AttentionParams& p, size_t k) {
  const AfaLayerParams& f = p.afa;
  AfaChannelDerived d;
  d.mu = f.unitary ? 0.0 : f.mu[k];
  d.mix = f.mix ? torch_sigmoid(f.delta[k]) : 1.0;
  d.prediction = std::exp(-d.mu * f.pred_dt) * std::polar(1.0, p.omega[k] * f.pred_dt);
  return d;
}

RtHeadDerived rt_head_derived(const AttentionParams& p, int h) {
  const RtLayerParams& r = p.rt;
  RtHeadDerived d;
  d.kappa = (r.nu[(size_t)h] + p.dim) / p.dim;
  d.S0 = r.eta2[(size_t)h] + r.gamma2[(size_t)h];
  return d;
}

RtLagTerms rt_lag_terms(const AttentionParams& p, int h, double lag, double m) {
  const RtLayerParams& r = p.rt;
  const size_t i = (size_t)h;
  const double l = std::fabs(lag), mu = r.mu[i];
  auto S = [&](double x) {
    const double one_m_e2 = -std::expm1(-2.0 * mu * x), e2 = std::exp(-2.0 * mu * x);
    const double proc = r.covariance == RtCovariance::stationary ? r.s2t[i] * one_m_e2
                                                                 : r.sigma2[i] * (mu > 0 ? one_m_e2 / (2.0 * mu) : x);
    return proc + r.eta2[i] * e2 + r.gamma2[i];
  };
  RtLagTerms t;
  t.decay = std::exp(-mu * l);
  t.S = S(l);
  const double lm2 = std::log(m * m + r.eps), a = S(0.0) > 0 ? S(0.0) / (m * m + r.eps) : 0.0;
  const double u = std::log(a + r.tau_th2[i]), v = t.S > 0 ? std::log(t.S) - lm2 + 2.0 * mu * l : -INFINITY;
  const double hi = std::max(u, v);
  t.log_P = -(hi + std::log1p(std::exp(-std::fabs(u - v))));
  t.bias = r.beta[i] * t.log_P;
  return t;
}

AfaLagTerms afa_lag_terms(const AttentionParams& p, int h, double lag) {
  const AfaLayerParams& f = p.afa;
  const double l = std::fabs(lag);
  AfaLagTerms t;
  double sum = 0.0;
  for (int d = 0; d < p.dim; ++d) {
    const size_t k = (size_t)h * p.dim + (size_t)d;
    const double mu = f.unitary ? 0.0 : f.mu[k], e = std::exp(-mu * l);
    const double phi = mu > 0.0 ? -std::expm1(-2.0 * mu * l) / (2.0 * mu) : l;
    const double cov = f.sigma2[k] * phi + f.eta2[k] * e * e + f.gamma2[k];
    t.mean_decay += e / p.dim;
    if (f.precision == AfaPrecision::channel_sum) sum += cov;
    else if (f.precision == AfaPrecision::one_channel) sum = d == f.precision_channel ? cov : sum;
    else sum += f.weight[k] / cov;
  }
  t.vC = f.precision == AfaPrecision::weighted ? 1.0 / (sum + f.weight_bias[(size_t)h]) : sum;
  const double nu = f.nu[(size_t)h], a2 = f.alpha[(size_t)h] * f.alpha[(size_t)h];
  t.precision = 1.0 / (nu * t.vC);
  t.bias = a2 == 0.0 ? 0.0 : -a2 * std::log(nu * t.vC + f.eps);
  return t;
}

Result<AttentionParams> physical_params(const ModelConfig& cfg, const RawAttentionParams& raw) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim();
  const double eps = a.epsilon;
  AttentionParams out;
  out.heads = H;
  out.dim = D;
  auto need = [&](const std::vector<double>& v, size_t n, const char* what) -> Status {
    if (v.size() == n) return Status::Ok();
    return make_error(Code::invalid_argument, std::string("physical_params: ") + what + ": " +
                                                  std::to_string(n) + " values expected, " +
                                                  std::to_string(v.size()) + " given");
  };
  for (auto [v, name] : {std::pair{&raw.mu_v, "mu_v"}, {&raw.sigma_v, "sigma_v"}, {&raw.sigma_tilde_v, "sigma_tilde_v"},
                         {&raw.eta_v, "eta_v"}, {&raw.gamma_v, "gamma_v"}, {&raw.tau_param, "tau_param"},
                         {&raw.nu_param, "nu_param"}})
    RFA_TRY(need(*v, (size_t)H, name));
  RFA_TRY(need(raw.omega_v, (size_t)H * (a.use_complex_conj_constraint ? D / 2 : D), "omega_v"));
  if (a.learn_t_shift) RFA_TRY(need(raw.t_shift_param, (size_t)H, "t_shift_param"));
  const bool gate = a.use_inner_residual && a.use_total_precision_gate == 1;
  if (gate) {
    RFA_TRY(need(raw.P_prior_log, (size_t)H, "P_prior_log"));
    RFA_TRY(need(raw.P_scale_log, (size_t)H, "P_scale_log"));
  }
  const bool colored = a.use_colored_prior && !a.learn_decay;
  if (colored)
    for (auto [v, name] : {std::pair{&raw.c_exp_v, "c_exp_v"}, {&raw.beta_exp_v, "beta_exp_v"}, {&raw.a_per_v, "a_per_v"},
                           {&raw.b_per_v, "b_per_v"}, {&raw.omega_per_v, "omega_per_v"}})
      RFA_TRY(need(*v, (size_t)H, name));
  const size_t HD = (size_t)H * D;
  if (a.use_complex_input_norm == 1) {
    RFA_TRY(need(raw.cn_q, HD, "cn_q.gamma"));
    RFA_TRY(need(raw.cn_k, HD, "cn_k.gamma"));
    RFA_TRY(need(raw.cn_v, HD, "cn_v.gamma"));
  }
  if (a.use_complex_output_norm) RFA_TRY(need(raw.cn_o, HD, "cn_o.gamma"));

  // ---- switches (docs/reference-code.md §4.3 order: learn_decay, colored, ss_process_noise, default) ----
  AttentionSwitches& sw = out.sw;
  sw.covariance = a.learn_decay            ? Covariance::residual_diffusion
                  : a.use_colored_prior    ? Covariance::colored
                  : a.use_ss_process_noise ? Covariance::hybrid
                                           : Covariance::ou_rate;
  sw.additive_bias = (AdditiveBias)a.additive_bias_type;      // 0 none, 1 -log V, 2 linear in lag
  sw.precision = (RobustPrecision)a.multiplicative_bias_type;  // 0 1/sqrt(d), 1 1/(nu V), 2 1/(s2 lag + eta2)
  sw.robust = a.use_robust_weight;
  sw.full_residual = a.use_full_residual_norm;
  sw.counter_rotate = a.rotate_values;
  // The mask comes from forward(causal=...): True in the LM's evaluation and in the signal
  // predictor; args.causal lets a config turn it off (it has no other effect in the reference).
  sw.causal = a.causal;
  sw.shift_rotation = true;  // the reference rotates by e^{i omega s} whenever a shift is active
  sw.gate = gate;
  sw.complex_input_norm = a.use_complex_input_norm == 1;
  sw.complex_output_norm = a.use_complex_output_norm;
  sw.min_exponent = a.min_exponent;
  sw.max_exponent = a.max_exponent;
  sw.cov_floor = 0.01;  // cov_epsilon in every reference covariance

  // ---- decay scale (docs/reference-code.md §3.1) ----
  double scale_r = 1.0;
  if (a.scale_decay_by_time_interval)
    scale_r = (a.learn_decay ? a.max_learned_decay : a.max_fixed_decay) / (double)(a.seq_len - 1);

  // ---- lag shift (docs/reference-code.md §4.1) ----
  // learn_t_shift: softplus(t_shift_param), whatever t_shift forward() receives. Otherwise the
  // scalar forward() receives: the signal predictor (ETT_NextStep_Predictor) always passes 1; the
  // LM passes none, and args.t_shift stands for an explicit one. None or 0 means no shift.
  double fixed_shift = 0.0;
  if (cfg.arch == Architecture::signal) fixed_shift = 1.0;
  else if (a.t_shift) fixed_shift = *a.t_shift;

  out.head.resize((size_t)H);
  out.omega.assign(HD, 0.0);
  for (int hh = 0; hh < H; ++hh) {
    HeadParams& hp = out.head[(size_t)hh];
    const size_t i = (size_t)hh;
    hp.mu = a.learn_decay ? scale_r * torch_sigmoid(raw.mu_v[i]) + eps : scale_r * raw.mu_v[i];
    hp.sigma2 = a.zero_process_noise ? 0.0 : torch_softplus(raw.sigma_v[i]);
    hp.s2t = a.zero_process_noise ? 0.0 : torch_softplus(raw.sigma_tilde_v[i]);
    hp.eta2 = a.zero_key_measurement_noise ? 0.0 : torch_softplus(raw.eta_v[i]) + eps;
    hp.gamma2 = torch_softplus(raw.gamma_v[i]) + eps;
    const double sp_nu = torch_softplus(raw.nu_param[i]);
    hp.nu = D * sp_nu + 2.0 + eps;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = torch_softplus(raw.tau_param[i]) + eps;
    hp.lag_shift = a.learn_t_shift ? torch_softplus(raw.t_shift_param[i]) : fixed_shift;
    if (colored) {
      hp.c_exp = torch_softplus(raw.c_exp_v[i]);
      hp.beta_exp = torch_softplus(raw.beta_exp_v[i]);
      // The periodic amplitude is squashed below a floor so V stays positive (docs/reference-code.md §4.3 item 2).
      const double v_zero = hp.eta2 + hp.gamma2;
      const double v_inf = hp.sigma2 / (2.0 * hp.mu + eps) + hp.gamma2;
      const double floor = 0.95 * std::min(v_zero, v_inf);
      const double ar = raw.a_per_v[i], br = raw.b_per_v[i];
      const double amp = std::sqrt(ar * ar + br * br + 1e-8);
      const double scale = (floor / amp) * std::tanh(amp / floor);
      hp.a_per = ar * scale;
      hp.b_per = br * scale;
      hp.omega_per = raw.omega_per_v[i];
    }
    if (gate) {
      hp.gate_prior_log = raw.P_prior_log[i];
      hp.gate_scale_log = raw.P_scale_log[i];
      const double nu_g = D * (sp_nu + 2.0 + eps);  // differs from nu: the 2 is multiplied by d (docs/reference-code.md §8)
      hp.gate_c = std::log(nu_g - 2.0 + eps) - std::log(nu_g + eps);
    }
    for (int d = 0; d < D; ++d) out.omega[i * (size_t)D + (size_t)d] = omega_of(a, raw.omega_v, D, hh, d);
  }
  if (a.use_complex_input_norm == 1) {
    out.norm_q = raw.cn_q;
    out.norm_k = raw.cn_k;
    out.norm_v = raw.cn_v;
  }
  if (a.use_complex_output_norm) out.norm_o = raw.cn_o;

  for (int hh = 0; hh < H; ++hh) {
    const HeadParams& hp = out.head[(size_t)hh];
    for (double v : {hp.mu, hp.sigma2, hp.s2t, hp.eta2, hp.gamma2, hp.nu, hp.kappa, hp.tau, hp.lag_shift,
                     hp.c_exp, hp.beta_exp, hp.a_per, hp.b_per, hp.gate_c})
      if (!std::isfinite(v))
        return make_error(Code::model_error, "head " + std::to_string(hh) +
                                                 ": a physical parameter is not finite (raw values out of range)");
  }
  return out;
}

HeadDerived head_derived(const HeadParams& hp, int dim) {
  HeadDerived d;
  d.brownian = std::fabs(hp.mu) < kBrownianMu;
  d.inv_two_mu = d.brownian ? 0.0 : 1.0 / (2.0 * hp.mu);
  d.lin_coef = hp.sigma2 / (hp.eta2 + hp.gamma2);
  d.col_r = 2.0 * hp.mu + hp.beta_exp;
  d.col_r_small = std::fabs(d.col_r) < kBrownianMu;
  d.col_rsq = 4.0 * hp.mu * hp.mu + hp.omega_per * hp.omega_per;
  d.col_rsq_small = d.col_rsq < kBrownianMu;
  d.inv_sqrt_d = 1.0 / std::sqrt((double)dim);
  d.gate_scale = std::exp(hp.gate_scale_log);
  return d;
}

LagTerms lag_terms(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = p.head[(size_t)h];
  const AttentionSwitches& sw = p.sw;
  const bool brownian = std::fabs(hp.mu) < kBrownianMu;
  LagTerms r;
  r.dt = lag + hp.lag_shift;
  const double e = std::clamp(-hp.mu * r.dt, sw.min_exponent, sw.max_exponent);
  r.E = std::exp(e);
  const double E2 = r.E * r.E, om = -std::expm1(2.0 * e);  // 1 - E^2 without cancellation
  const double meas = hp.eta2 * E2 + hp.gamma2 + sw.cov_floor;
  // sigma2 * phi(mu, dt), phi = (1 - E^2) / (2 mu), with its Brownian limit dt.
  const double ou = brownian ? hp.sigma2 * r.dt : hp.sigma2 * om / (2.0 * hp.mu);
  switch (sw.covariance) {
    case Covariance::stationary: r.vcov = hp.s2t * om + meas; break;
    case Covariance::ou_rate: r.vcov = ou + meas; break;
    case Covariance::residual_diffusion: r.vcov = hp.s2t * om + hp.sigma2 * r.dt + meas; break;
    case Covariance::hybrid: r.vcov = (brownian ? hp.s2t * r.dt : hp.s2t * om) + meas; break;
    case Covariance::colored: {
      const double rr = 2.0 * hp.mu + hp.beta_exp;
      const double frac = std::fabs(rr) < kBrownianMu ? r.dt : std::expm1(rr * r.dt) / rr;
      const double two_mu = 2.0 * hp.mu, w = hp.omega_per, rsq = two_mu * two_mu + w * w;
      double per;
      if (rsq < kBrownianMu) {
        per = hp.a_per * r.dt;
      } else {
        const double c = std::cos(w * r.dt), s = std::sin(w * r.dt), dc = c - E2;
        per = (hp.a_per * (two_mu * dc + w * s) + hp.b_per * (two_mu * s - w * dc)) / rsq;
      }
      r.vcov = std::max(ou + hp.c_exp * E2 * frac + per + meas, kColoredFloor);
      break;
    }
  }
  switch (sw.additive_bias) {
    case AdditiveBias::none: r.B = 0.0; break;
    case AdditiveBias::neg_log_vcov: r.B = -std::log(r.vcov); break;
    case AdditiveBias::linear_lag: r.B = -(hp.sigma2 / (hp.eta2 + hp.gamma2)) * r.dt; break;
  }
  switch (sw.precision) {
    case RobustPrecision::inv_sqrt_d: r.P = 1.0 / std::sqrt((double)p.dim); break;
    case RobustPrecision::inv_nu_vcov: r.P = 1.0 / (hp.nu * r.vcov); break;
    case RobustPrecision::inv_linear: r.P = 1.0 / (hp.sigma2 * r.dt + hp.eta2); break;
  }
  return r;
}

RegimeInfo regime(const AttentionParams& p, int h) {
  const HeadParams& hp = p.head[(size_t)h];
  const Covariance c = p.sw.covariance;
  // Covariances that learn the stationary variance report s2t; the OU-rate family implies
  // sigma2 / (2 mu), infinite in the Brownian limit (where they switch to sigma2 * lag).
  const bool implied = c == Covariance::ou_rate || c == Covariance::colored;
  const bool lhopital = implied || c == Covariance::hybrid;
  RegimeInfo r;
  const bool brownian = hp.mu == 0.0 || (lhopital && std::fabs(hp.mu) < kBrownianMu);
  const double inf = std::numeric_limits<double>::infinity();
  r.stationary_variance = !implied ? hp.s2t : (brownian ? inf : hp.sigma2 / (2.0 * hp.mu));
  r.alpha = hp.eta2 - r.stationary_variance;
  r.beta = hp.gamma2 + r.stationary_variance + p.sw.cov_floor;
  r.regime = brownian ? Regime::brownian : (r.alpha > 0 ? Regime::integrative : Regime::diffusive);
  return r;
}

PairTerms pair_terms(const AttentionParams& p, int h, const std::vector<std::complex<double>>& q_rot,
                     const std::vector<std::complex<double>>& k_rot, double t_i, double t_j) {
  const HeadParams& hp = p.head[(size_t)h];
  PairTerms r;
  r.lag = p.sw.causal ? t_i - t_j : std::fabs(t_i - t_j);
  r.k = lag_terms(p, h, r.lag);
  for (size_t d = 0; d < q_rot.size() && d < k_rot.size(); ++d) {
    r.cross += (std::conj(q_rot[d]) * k_rot[d]).real();
    r.q_norm2 += std::norm(q_rot[d]);
    r.k_norm2 += std::norm(k_rot[d]);
  }
  // |Q - E e^{i w (t_i - t_j)} K|^2 = |Q~|^2 + E^2 |K~|^2 - 2 E Re(Q~^H K~): the kernel's expansion.
  const double E = r.k.E;
  r.R2 = p.sw.full_residual ? r.q_norm2 + E * E * r.k_norm2 - 2.0 * E * r.cross : -E * r.cross;
  r.L = p.sw.robust ? r.k.B - hp.kappa * std::log1p(r.k.P * r.R2) : r.k.B - r.k.P * r.R2;
  r.logit = hp.tau * r.L;
  return r;
}

}  // namespace rfa::physics
