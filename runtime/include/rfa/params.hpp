// The canonical, physical form of one RFA attention layer (docs/math.md §3).
// Every model (the paper's Algorithm 1, the author's reference code, the baselines) is loaded into
// these per-head numbers and switches; kernels see nothing else.
#pragma once

#include "rfa/export.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

// How the covariance Vcov(lag) of a transported key is formed (docs/reference-code.md §4.3).
enum class Covariance : uint32_t {
  stationary = 0,          // paper Alg. 1: s2t (1 - E^2) + eta2 E^2 + gamma2 (+ cov_floor)
  ou_rate = 1,             // reference default: sigma2 (1-E^2)/(2 mu), or sigma2 lag when |mu| < 1e-5
  residual_diffusion = 2,  // learn_decay: s2t (1 - E^2) + sigma2 lag + eta2 E^2 + gamma2
  hybrid = 3,              // use_ss_process_noise: s2t lag if |mu| < 1e-5 else s2t (1 - E^2)
  colored = 4,             // use_colored_prior: ou_rate + exponential + periodic terms, floored
};

// Additive bias B(lag) on the logit (docs/reference-code.md §5.2, "additive_bias_type").
enum class AdditiveBias : uint32_t {
  none = 0,          // 0
  neg_log_vcov = 1,  // -log Vcov
  linear_lag = 2,    // -(sigma2 / (eta2 + gamma2)) lag (ALiBi-like)
};

// Precision P inside the robust term (docs/reference-code.md §5.2, "multiplicative_bias_type").
enum class RobustPrecision : uint32_t {
  inv_sqrt_d = 0,   // 1 / sqrt(D)
  inv_nu_vcov = 1,  // 1 / (nu Vcov)
  inv_linear = 2,   // 1 / (sigma2 lag + eta2)
};

struct AttentionSwitches {
  Covariance covariance = Covariance::ou_rate;
  AdditiveBias additive_bias = AdditiveBias::neg_log_vcov;
  RobustPrecision precision = RobustPrecision::inv_nu_vcov;
  bool robust = true;          // Student-t: L = B - kappa log(1 + P R2); false: Gaussian L = B - P R2
  bool full_residual = true;   // false: R2 = -E cross (pure-rotation / RoPE limit)
  bool counter_rotate = true;  // rotate the aggregate back by e^{+i omega t_i} (rotate_values)
  // Values rotated into the stationary frame like keys (RFA, always). false: they enter unrotated and
  // nothing is rotated back, whatever counter_rotate says (ACC's Q/K-only rotation, docs/variant-acc.md).
  bool stationary_values = true;
  bool causal = true;
  bool shift_rotation = true;  // a non-zero lag shift also rotates the output by e^{+i omega s}
  bool gate = false;           // inner residual with the confidence gate (paper C.4, reference M2.7)
  bool complex_input_norm = false;   // complex RMS norm on Q, K, V (use_complex_input_norm = 1)
  bool complex_output_norm = false;  // complex RMS norm on the aggregate (use_complex_output_norm)
  double min_exponent = -10.0;  // clamp on -mu * lag (reference); -inf-like (-1e30) disables it
  double max_exponent = 0.0;
  double cov_floor = 0.01;      // constant added to Vcov (reference cov_epsilon; paper: 0)
};

// Physical per-head numbers. Names follow the paper; comments give the reference's raw source.
struct HeadParams {
  double mu = 0;         // decay rate (scale_r * mu_v, or scale_r * sigmoid(mu_v) + eps)
  double sigma2 = 0;     // process-noise rate (softplus(sigma_v))
  double s2t = 0;        // stationary variance sigma-tilde^2 (softplus(sigma_tilde_v)); used by
                         // stationary / residual_diffusion / hybrid covariances
  double eta2 = 0;       // key measurement noise (softplus(eta_v) + eps)
  double gamma2 = 0;     // query measurement noise (softplus(gamma_v) + eps)
  double nu = 0;         // Student-t degrees of freedom
  double kappa = 1;      // robust exponent (nu + D) / D
  double tau = 1;        // inverse temperature on the whole logit
  double lag_shift = 0;  // added to every lag (softplus(t_shift_param), or an explicit t_shift)
  // colored prior (Covariance::colored), already transformed (docs/reference-code.md §4.3 rule 2)
  double c_exp = 0, beta_exp = 0, a_per = 0, b_per = 0, omega_per = 0;
  // confidence gate (paper C.4): g = sigmoid(exp(gate_scale_log) (logsumexp energy + gate_c) - gate_prior_log)
  double gate_prior_log = 0, gate_scale_log = 0, gate_c = 0;
};

// Where the rotation angle of position i in complex dim d comes from (docs/variant-acc.md).
//  omega_t: omega_d t_i (RFA: one clock drives every dim);
//  accumulated_rope / accumulated_random: theta_i = wrap(theta_{i-1} + phi_i), the inclusive prefix of
//  per-token steps phi_i,d = omega_d (RoPE exactly: theta_i = omega (i + 1)) or 2 omega_d u with u a
//  counter-based uniform of (step_seed, step_layer, batch row, position, dim) shared by the heads.
//  accumulated_learned: phi_i,d = Phi[token_i][d], a per-layer [vocab][dim] table shared by the heads
//  (language models: the steps follow the token ids).
enum class PhaseSource : uint32_t { omega_t = 0, accumulated_rope = 1, accumulated_random = 2, accumulated_learned = 3 };

// Which mechanism an attention layer runs: RFA (the paper), Adaptive Filter Attention, the
// thesis RFA grew from, in its memory-optimised form (docs/variant-afa.md), or RT-RFA, RFA on the
// sphere with magnitudes as confidences (docs/variant-rt.md).
// afa_full: AFA's full (anisotropic) form, per-channel precisions and normalisers
// (docs/variant-afa-full.md); its parameters are AfaLayerParams as well.
enum class AttentionVariant : uint32_t { rfa = 0, afa = 1, rt = 2, afa_full = 3 };
// The mechanism's name ("RFA", "AFA", "RT-RFA"; "?" for an unknown value).
RFA_API const char* attention_variant_name(AttentionVariant v);

// Which weights the readouts of an AFA layer read (Inspector::attention, row_diagnostics,
// HeatmapRequest::channel, DiagnosticsRequest::channel; docs/variant-afa-full.md §5): a channel
// c >= 0 (full AFA: that channel's normalised weights Q_c; memory-optimised: the softmax, with A its
// decay e_c), the channel mean (every mechanism's ordinary weights) or the reweighting map (full: W,
// memory-optimised: the softmax; A = the map).
constexpr int kAllChannels = -1, kReweighting = -2;

// Where an AFA layer's scalar-per-pair score covariance v^C(l) comes from (docs/variant-afa.md §4).
enum class AfaPrecision : uint32_t {
  channel_sum = 0,  // v^C = sum_k cov_k(l)
  one_channel = 1,  // v^C = cov_c(l), c = precision_channel
  weighted = 2,     // v^C = 1 / (sum_k w_k / cov_k(l) + b)
};

// An AFA layer's physical parameters (docs/variant-afa.md §3). Per channel: [heads * dim], the
// frequencies are AttentionParams::omega; per head: [heads].
struct AfaLayerParams {
  AfaPrecision precision = AfaPrecision::channel_sum;
  int precision_channel = 0;
  bool unitary = false;  // Re(lambda) taken as 0, Q and K projected to unit modulus per channel
  bool mix = false;      // filtered <- (1 - sigmoid(delta_k)) V_ik + sigmoid(delta_k) filtered
  double eps = 1e-5;     // inside the score's log
  double pred_dt = 1.0;  // the prediction horizon h: est = e^{lambda_k h} filtered
  // Tied iterations (docs/variant-afa-full.md §3): n passes of the layer with shared parameters, the
  // later ones with Q = K = V = the previous estimate, mixed by the gate, plus momentum g (z_k - z_{k-1}).
  int irls_iterations = 1;
  double irls_momentum = 0.0;
  std::vector<double> mu, sigma2, eta2, gamma2, delta, weight;  // [heads * dim]; delta / weight may be empty
  std::vector<double> nu, alpha, weight_bias;                   // [heads]; weight_bias may be empty
};

// RT-RFA's tangential covariance S(l) and score kernel (docs/variant-rt.md §3.2, §3.3).
enum class RtCovariance : uint32_t {
  stationary = 0,  // s2t (1 - E^2) + eta2 E^2 + gamma2
  ou_rate = 1,     // sigma2 phi(mu, l) + eta2 E^2 + gamma2
};
enum class RtKernel : uint32_t {
  student_t = 0,  // L = log P - kappa log(1 + d2 / nu)
  gaussian = 1,   // L = log P - d2
};

// An RT-RFA layer's physical parameters (docs/variant-rt.md §4, §13): per head [heads]; the
// frequencies are AttentionParams::omega. mu_t = mu, directions normalised per head.
struct RtLayerParams {
  RtCovariance covariance = RtCovariance::stationary;
  RtKernel kernel = RtKernel::student_t;
  double eps = 1e-6;  // added to every squared magnitude
  std::vector<double> mu, s2t, sigma2, eta2, gamma2, tau_th2, nu, beta;  // [heads]
};

// One attention layer in physical form.
struct AttentionParams {
  AttentionVariant variant = AttentionVariant::rfa;
  // variant == afa only. head[] then holds the RFA head each AFA head reduces to with one decay
  // (mean mu, summed noises, nu, tau = alpha^2; docs/variant-afa.md §9) for summaries and regimes;
  // of sw only `causal` matters.
  AfaLayerParams afa;
  RtLayerParams rt;  // variant == rt only (head[] then holds zeros except mu; sw only `causal`)
  int heads = 1;
  int dim = 1;  // D: complex dims per head (queries, keys and values alike)
  AttentionSwitches sw;
  std::vector<HeadParams> head;      // [heads]
  std::vector<double> omega;         // [heads * dim], rotation frequency of each complex dim
  PhaseSource phase = PhaseSource::omega_t;
  uint32_t step_seed = 0, step_layer = 0;  // accumulated_random: the draws' seed and layer index
  std::vector<double> step_table;          // accumulated_learned: Phi [step_vocab * dim]
  int step_vocab = 0;
  // complex RMS-norm gains, [heads * dim] each, empty when that norm is off
  std::vector<double> norm_q, norm_k, norm_v, norm_o;
};

// The noise regime of a head (docs/math.md §5).
enum class Regime : uint32_t { diffusive = 0, integrative = 1, brownian = 2 };
RFA_API const char* regime_name(Regime r);

struct RegimeInfo {
  double stationary_variance = 0;  // s2t (paper) or sigma2 / (2 mu) (reference)
  double alpha = 0;                // eta2 - stationary variance
  double beta = 0;                 // gamma2 + stationary variance + cov_floor
  Regime regime = Regime::diffusive;
};

}  // namespace rfa
