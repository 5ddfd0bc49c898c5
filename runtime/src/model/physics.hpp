// The physics of a head, as the runtime itself uses it on the host (loader, regimes, kernel
// curves, the viewer's pair readout, window bounds): raw reference parameters -> physical ones,
// and the per-lag kernels E, Vcov, B, P evaluated in double the way the GPU kernels evaluate them
// in float (shaders/common/rfa_lag_kernels.glsl: one pass over the switches per lag).
//
// This is production code. The tests' oracle is the double twin (reference/rfa_math.*,
// reference/attention_ref.*), written separately from the definitions; tests compare the two, and
// this module's pair terms with the GPU probe's weights, so a bug here cannot hide behind itself.
#pragma once

#include <complex>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "rfa/params.hpp"
#include "rfa/status.hpp"

namespace rfa::physics {

// PyTorch's F.softplus (beta 1, threshold 20) and sigmoid, in double.
double torch_softplus(double x);
double torch_sigmoid(double x);

// The raw per-layer parameters of MultiheadIsotropicRFA, as stored (f64), one entry per head
// unless noted. Vectors of optional parameters are empty when the flag that creates them is off.
struct RawAttentionParams {
  std::vector<double> mu_v, sigma_v, sigma_tilde_v, eta_v, gamma_v, tau_param, nu_param;
  std::vector<double> omega_v;        // [H * D/2] (conjugate pairs) or [H * D]
  std::vector<double> t_shift_param;  // [H], learn_t_shift only
  std::vector<double> P_prior_log, P_scale_log;
  std::vector<double> cn_q, cn_k, cn_v, cn_o;  // [H * D]
  std::vector<double> c_exp_v, beta_exp_v, a_per_v, b_per_v, omega_per_v;  // use_colored_prior
};

// Raw -> physical, exactly as the reference forward pass uses them (docs: the model format page).
Result<AttentionParams> physical_params(const ModelConfig& cfg, const RawAttentionParams& raw);

// The raw per-layer parameters of an AFA layer (docs/variant-afa.md §12), as stored (f64).
struct RawAfaParams {
  std::vector<double> omega_v, afa_mu_v;  // [H * D/2] (conjugate pairs) or [H * D]
  std::vector<double> afa_sigma_v, afa_eta_v, afa_gamma_v;  // [H * D]
  std::vector<double> afa_nu_v, afa_alpha_v;                // [H]
  std::vector<double> afa_delta_v;                          // [H * D], afa_mix only
  std::vector<double> afa_weight_v, afa_weight_bias_v;      // [H * D], [H]; afa_precision = weighted only
};

// Raw -> physical for an AFA layer (variant afa; head[] holds zeros, sw only `causal`).
Result<AttentionParams> afa_physical_params(const ModelConfig& cfg, const RawAfaParams& raw);

// The raw per-layer parameters of an RT-RFA layer (docs/variant-rt.md §13), as stored (f64).
struct RawRtParams {
  std::vector<double> omega_v;  // [H * D/2] (conjugate pairs) or [H * D]
  std::vector<double> rt_mu_v, rt_sigma_v, rt_eta_v, rt_gamma_v, rt_tau_th_v, rt_nu_v, rt_beta_v;  // [H]
};

// Raw -> physical for an RT-RFA layer (variant rt; head[] holds mu, s2t/sigma2, eta2, gamma2, nu
// for summaries; sw only `causal`).
Result<AttentionParams> rt_physical_params(const ModelConfig& cfg, const RawRtParams& raw);

// What an AFA layer's table holds beside its parameters, for channel k = h * D + d: mu (0 under
// the unitary switch), the mix gate sigmoid(delta_k) (1 without afa_mix) and the prediction
// e^{lambda_k h} = e^{-mu_k h} e^{i omega_k h} over the horizon h = pred_dt.
struct AfaChannelDerived {
  double mu = 0, mix = 1;
  std::complex<double> prediction;
};
AfaChannelDerived afa_channel_derived(const AttentionParams& p, size_t k);

// What an RT-RFA layer's table holds beside its parameters, for head h: the Student-t exponent
// kappa = (nu + D) / D and S(0) = eta2 + gamma2.
struct RtHeadDerived {
  double kappa = 0, S0 = 0;
};
RtHeadDerived rt_head_derived(const AttentionParams& p, int h);

// An AFA head's lag-only terms at |lag| (docs/variant-afa.md §4, §11), as the kernel forms them:
// the channel-mean decay, the score covariance v^C, its precision 1 / (nu v^C) and the logit at
// zero residual -alpha^2 log(nu v^C + eps).
struct AfaLagTerms {
  double mean_decay = 0, vC = 0, precision = 0, bias = 0;
};
AfaLagTerms afa_lag_terms(const AttentionParams& p, int h, double lag);

// An RT-RFA head's lag-only terms at |lag| between tokens of magnitude m (docs/variant-rt.md §3.2
// and docs/variant-rt.md §10): the magnitude decay, S(lag), log P and beta_s log P.
struct RtLagTerms {
  double decay = 0, S = 0, log_P = 0, bias = 0;
};
RtLagTerms rt_lag_terms(const AttentionParams& p, int h, double lag, double m = 1.0);

// |mu| below this takes the Brownian (L'Hôpital) branch of ou_rate / colored / hybrid (the
// reference's epsilon); the colored covariance is clamped from below at kColoredFloor.
inline constexpr double kBrownianMu = 1e-5;
inline constexpr double kColoredFloor = 0.01;

// The terms of head `hp` the kernels read beside its parameters (the per-head table,
// shaders/common/rfa_head_table.h), derived here in double once per layer: the Brownian switch,
// 1/(2 mu) of the ou_rate and hybrid covariances, sigma2 / (eta2 + gamma2) of residual_diffusion,
// the colored prior's rates r = 2 mu + beta_exp and r^2 = 4 mu^2 + omega_per^2 with their small-rate
// switches, 1/sqrt(D), and the gate's scale e^{scale_log}.
struct HeadDerived {
  bool brownian = false;
  double inv_two_mu = 0, lin_coef = 0, col_r = 0, col_rsq = 0, inv_sqrt_d = 0, gate_scale = 0;
  bool col_r_small = false, col_rsq_small = false;
};
HeadDerived head_derived(const HeadParams& hp, int dim);

// Every lag kernel of head h at raw lag `lag` (|t_i - t_j| or t_i - t_j; the shift is added here).
struct LagTerms {
  double dt = 0;    // lag + shift
  double E = 0;     // decay exp(clamp(-mu dt))
  double vcov = 0;  // covariance of the transported key
  double B = 0;     // additive bias
  double P = 0;     // precision in the robust / Gaussian term
};
LagTerms lag_terms(const AttentionParams& p, int h, double lag);

// Regime of a head (docs: the math page, "regimes").
RegimeInfo regime(const AttentionParams& p, int h);

// One (query, key) pair from the cached, rotated values (the stationary frame: Z~ = Z e^{-i w t}),
// |Q~|^2 and |K~|^2 (rotation-invariant), exactly the GPU kernel's algebra in double.
struct PairTerms {
  LagTerms k;
  double lag = 0, q_norm2 = 0, k_norm2 = 0, cross = 0, R2 = 0, L = 0, logit = 0;
};
PairTerms pair_terms(const AttentionParams& p, int h, const std::vector<std::complex<double>>& q_rot,
                     const std::vector<std::complex<double>>& k_rot, double t_i, double t_j);

}  // namespace rfa::physics
