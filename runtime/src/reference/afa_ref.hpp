// The double-precision CPU twin of Adaptive Filter Attention (AFA): the memory-optimised form (one
// scalar weight per query-key pair, per-channel transport of keys and values; docs/variant-afa.md),
// the full (anisotropic) form (per-channel precisions, one Mahalanobis reweighting per pair and
// per-channel normalisers; docs/variant-afa-full.md, afa_full_ref.cpp) and tied iterations of
// either (IRLS with the mix and momentum; afa_layer_ref.cpp).
// It is the tests' oracle for a future GPU path, so it is written from the definitions, not from
// any fast algebra:
//  * every per-pair, per-channel transport e^{lambda_k (t_i - t_j)} is formed from the lag
//    l = t_i - t_j directly (decay exp(-mu_k l) times the phase e^{i omega_k l}), never as
//    e^{lambda t_i} e^{-lambda t_j}: that factorisation is exact only in exact arithmetic and
//    overflows once mu t passes ~700 in double (~88 in float);
//  * the residual is formed as it is defined, R2 = sum_k |e^{lambda_k l} K_jk - Q_ik|^2, not from
//    the expanded |Q|^2 + e^2 |K|^2 - 2 e Re(...) that a kernel would use;
//  * every softmax and log-sum-exp is formed per row from the whole row.
//
// Layouts: Q, K, V, filtered, est: complex [B][N][H][D] (as the RFA twin); t: [B][N] (empty: t = n);
// attention matrices [B][H][N][N]; per-row statistics [B][H][N]; per-channel parameters [H][D].
//
// Causal layers (the default) require t non-decreasing within each sequence, so every unmasked
// lag is >= 0. Non-causal layers use |l| for the decay and the covariance and the signed l for the
// phase (the RFA twin's convention), so a transported value never grows.
#pragma once

#include <complex>
#include <cstddef>
#include <vector>

#include "rfa/params.hpp"
#include "rfa/status.hpp"

namespace rfa::ref {

using cd = std::complex<double>;

// Where the scalar-per-pair covariance v^C(l) of the score comes from: rfa::AfaPrecision
// (channel_sum: the thesis's Algorithm 1, line 11; one_channel: the text's scalar dynamics;
// weighted: the learned weighted sum of per-channel precisions).
using AfaPrecision = rfa::AfaPrecision;

struct AfaHeadParams {
  double nu = 1.0;            // Mahalanobis scale on v^C (> 0)
  double alpha = 1.0;         // temperature: logit = alpha^2 L
  double eps = 0.0;           // stability constant inside the log (>= 0)
  double pred_dt = 1.0;       // nominal prediction horizon (the thesis's Delta t), >= 0
  int precision_channel = 0;  // the channel of AfaPrecision::one_channel
  double weight_bias = 0.0;   // b of AfaPrecision::weighted (>= 0; the thesis's beta^2)
};

// The most tied iterations a layer may run (the GPU keeps a cache per iteration).
constexpr int kAfaMaxIrlsIterations = 16;

struct AfaParams {
  int heads = 0, dim = 0;           // H, D (D complex channels per head)
  std::vector<double> lambda_re;    // [H][D] Re(lambda_k) = -mu_k, <= 0
  std::vector<double> omega;        // [H][D] Im(lambda_k); conjugate pairs are interleaved (afa_set_conjugate_pairs)
  std::vector<double> sigma2;       // [H][D] process noise rate (lambda_C^2 lambda_Omega), >= 0
  std::vector<double> eta2;         // [H][D] key measurement noise (lambda_Gamma), >= 0
  std::vector<double> gamma2;       // [H][D] query measurement noise, >= 0; empty: 0 (the thesis)
  std::vector<double> delta;        // [H][D] mix logits, read only when mix is on
  std::vector<double> weight;       // [H][D] w_k >= 0, read only with AfaPrecision::weighted
  std::vector<AfaHeadParams> head;  // [H]
  AfaPrecision precision = AfaPrecision::channel_sum;
  bool unitary = false;  // the thesis's unitary case: Re(lambda) taken as 0, Q and K projected to unit modulus per channel
  bool causal = true;
  bool mix = false;      // filtered <- (1 - sigmoid(delta_k)) V_ik + sigmoid(delta_k) filtered
  // The full (anisotropic) form (docs/variant-afa-full.md §2): per pair and channel the precision
  // P_k = 1 / (cov_k(l) + eps), the reweighting W = (1 + sum_k P_k |r_k|^2 / nu)^(-alpha^2) and the
  // per-channel normalised weights Q_k = W P_k / sum_j W P_k. `precision` must stay channel_sum.
  bool full = false;
  // Tied iterations (docs/variant-afa-full.md §3, the thesis's IRLS): z1 = V, z2 = mix(z1, AFA(Q, K,
  // V)), z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k)) + momentum (z_k - z_{k-1}) for k = 2..n; the
  // prediction of z_{n+1}. mix uses the gate sigmoid(delta_k) with `mix`, else 1.
  int irls_iterations = 1;     // n >= 1 (1: one ordinary layer)
  double irls_momentum = 0.0;  // g in [0, 1)
};

// A model's AFA layer (rfa::AttentionParams with variant afa, docs/variant-afa.md §12) in this
// twin's form: lambda_re = -mu, the per-head eps, horizon and precision channel from the layer.
AfaParams afa_twin_params(const AttentionParams& p);

// Checks every field; the message names the one at fault ("params.lambda_re[h=0][k=3]").
Status afa_check_params(const AfaParams& p);

// Fills p->lambda_re and p->omega [H][D] from D/2 learned eigenvalues per head (re_half, omega_half:
// [H][D/2]) as interleaved conjugate pairs: channel 2m is re + i omega, channel 2m+1 re - i omega.
Status afa_set_conjugate_pairs(AfaParams* p, const std::vector<double>& re_half, const std::vector<double>& omega_half);

// mu_k as the layer uses it: -lambda_re, or 0 when the unitary switch is on.
double afa_mu(const AfaParams& p, int h, int k);

// One channel's lag kernels at lag l (|l| is used): E = e^{-mu l}, phi = (1 - E^2)/(2 mu) (l at
// mu = 0), cov = sigma2 phi + eta2 E^2 + gamma2, P = 1 / cov (+inf when cov = 0).
struct AfaChannelKernel {
  double E = 0, phi = 0, cov = 0, P = 0;
};
AfaChannelKernel afa_channel_kernel(const AfaParams& p, int h, int k, double lag);

// The score's scalar covariance v^C(l) for the head's precision source (before nu).
double afa_score_variance(const AfaParams& p, int h, double lag);

// One query-key pair of head h of the memory-optimised form; q and k are the head's D raw values (the
// unitary projection is applied here). Masking is the caller's business.
struct AfaPairTerms {
  double lag = 0;    // t_i - t_j
  double vC = 0;     // afa_score_variance at the lag
  double R2 = 0;     // sum_k |e^{lambda_k lag} k_k - q_k|^2
  double arg = 0;    // nu vC + R2 + eps
  double L = 0;      // -log(arg)
  double logit = 0;  // alpha^2 L (0 when alpha = 0)
};
AfaPairTerms afa_pair_terms(const AfaParams& p, int h, const cd* q, const cd* k, double t_i, double t_j);

// One query-key pair of head h of the full form (equations A3-A6 of docs/variant-afa-full.md §2),
// every term as defined: per channel the decay, covariance, precision P_k = 1 / (cov_k + eps) and the
// residual r_k = e^{lambda_k l} k_k - q_k; D2 = sum_k P_k |r_k|^2, W = (1 + D2 / nu)^(-alpha^2) and
// the unnormalised per-channel weights W P_k.
struct AfaFullPairTerms {
  double lag = 0;
  std::vector<double> E, cov, P;  // [D]
  std::vector<cd> r;              // [D]
  double D2 = 0, W = 0;
  std::vector<double> WP;         // [D]
};
AfaFullPairTerms afa_full_pair_terms(const AfaParams& p, int h, const cd* q, const cd* k, double t_i, double t_j);

struct AfaOptions {
  bool want_matrices = false;                // fill AfaOutputs::attn
  const std::vector<double>* horizon = nullptr;  // [B][N] prediction horizons (>= 0); null: pred_dt
  int window = 0;  // causal only: W > 0 lets query i see keys [i - W + 1, i] (a banded mask); 0: all
  bool want_iterates = false;  // fill AfaOutputs::iterates
};

struct AfaOutputs {
  int B = 0, N = 0, H = 0, D = 0;
  std::vector<cd> filtered;     // Z_bar after the optional mix, before the prediction [B][N][H][D]
  std::vector<cd> est;          // the prediction e^{lambda_k h_i} Z_bar [B][N][H][D]
  // The first iteration's weights, with want_matrices, zeros where masked: the softmax weights Q_ij
  // (memory-optimised) or the channel mean (1/D) sum_k Q_k,ij of the per-channel weights (full)
  // [B][H][N][N]; full only: the per-channel weights Q_k,ij [B][H][D][N][N] and the reweighting map
  // W_ij [B][H][N][N].
  std::vector<double> attn, channel_attn, reweight;
  // The first iteration's row statistics [B][H][N]: memory-optimised, max_j logit_ij and
  // logsumexp_j logit_ij (+inf when some arg is 0); full, 0 and (1/D) sum_k log den_k.
  std::vector<double> row_max, row_lse;
  std::vector<double> den;      // full: the normalisers den_k = sum_j W_ij P_k(l_ij) [B][H][N][D]
  std::vector<cd> iterates;     // with want_iterates: z_1 .. z_{n+1} [n+1][B][N][H][D] (z_1 = V)
};

// One AFA layer. t may be empty (t = 0..N-1 for every sequence).
Status afa_forward(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                   const std::vector<cd>& V, const std::vector<double>& t, AfaOutputs* out, const AfaOptions& opt = {});

// Decode: the state of one sequence is every past position's key and value ([n][H][D], as given:
// the twin transports from the lag, so it needs no rotated copies), its iterates z_2 .. z_n (tied
// iterations: every iteration's estimates at past positions never change, so each keeps its own
// cache) and timestamp. A step appends the new position and answers its row; the result equals
// afa_forward's row for that position.
struct AfaDecodeState {
  int H = 0, D = 0, n = 0, iterations = 1;
  std::vector<cd> K, V;   // [n][H][D]
  std::vector<cd> Z;      // [n][iterations - 1][H][D]: z_2 .. z_n
  std::vector<double> t;  // [n]
};
struct AfaStepOutput {
  std::vector<cd> filtered, est;         // [H][D]
  std::vector<double> row_max, row_lse;  // [H]
  std::vector<double> attn;              // [H][n] (n after the step)
};
Status afa_decode_reset(const AfaParams& p, AfaDecodeState* st);
// q, k, v: the new position's [H][D]. horizon: the prediction horizon, null for pred_dt.
Status afa_decode_step(const AfaParams& p, AfaDecodeState* st, const cd* q, const cd* k, const cd* v, double t,
                       AfaStepOutput* out, const double* horizon = nullptr);

// ---- Diagnostics (docs/variant-afa.md) ----

enum class AfaRegime { diffusive, integrative, brownian };
struct AfaChannelInfo {
  double lambda_re = 0, omega = 0;  // as used (lambda_re = 0 under the unitary switch)
  double time_constant = 0;         // 1/mu (+inf at mu = 0)
  double period = 0;                // 2 pi / |omega| (+inf at omega = 0)
  double stationary_var = 0;        // sigma2 / (2 mu) (+inf at mu = 0 with sigma2 > 0, 0 with sigma2 = 0)
  double eta2 = 0, gamma2 = 0;
  double alpha = 0, beta = 0;       // eta2 - stationary_var, gamma2 + stationary_var
  AfaRegime regime = AfaRegime::diffusive;
  double mix_gate = 1;              // sigmoid(delta_k) when mix is on, else 1
};
Status afa_channel_info(const AfaParams& p, int h, std::vector<AfaChannelInfo>* info);

// Per-channel kernels over the given lags ([D][L] each) and the score's lag-only part.
struct AfaKernelCurves {
  std::vector<double> lag;             // as given [L]
  std::vector<double> E, cov, P;       // [D][L]
  std::vector<double> score_var;       // v^C(l) [L]
  std::vector<double> score_bias;      // alpha^2 * -log(nu v^C + eps): the logit at zero residual [L]
};
Status afa_kernel_curves(const AfaParams& p, int h, const std::vector<double>& lags, AfaKernelCurves* c);

// Per-row statistics from outputs computed with want_matrices.
struct AfaRowDiagnostics {
  std::vector<double> entropy;       // -sum_j Q log Q [B][H][N]
  std::vector<double> max_weight;    // max_j Q_ij
  std::vector<double> expected_lag;  // sum_j Q_ij |t_i - t_j|
  std::vector<double> channel_mass;  // sum_j Q_ij e^{-mu_k |l_ij|}, the per-channel decayed mass [B][H][N][D]
};
Status afa_row_diagnostics(const AfaParams& p, int B, int N, const std::vector<double>& t, const AfaOutputs& out,
                           AfaRowDiagnostics* d);

// Pulled-forward estimates of target i: e^{lambda_k (t_i - t_j)} V_jk for j = 0..i ([i+1][D]).
Status afa_pulled_forward(const AfaParams& p, int B, int N, const std::vector<cd>& V, const std::vector<double>& t,
                          int b, int h, int i, std::vector<cd>* out);

// Basis consistency ||W_V W_P - I_dv||_F; W_V is [dv][de], W_P is [de][dv], row-major.
Result<double> afa_basis_consistency(const std::vector<cd>& W_V, const std::vector<cd>& W_P, int dv, int de);

}  // namespace rfa::ref
