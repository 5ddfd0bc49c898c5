// The double-precision CPU twin of Adaptive Filter Attention (AFA), memory-optimised form: one
// scalar weight per query-key pair, per-channel transport of keys and values (docs/variant-afa.md).
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

// One query-key pair of head h; q and k are the head's D raw values (the unitary projection is
// applied here). Masking is the caller's business.
struct AfaPairTerms {
  double lag = 0;    // t_i - t_j
  double vC = 0;     // afa_score_variance at the lag
  double R2 = 0;     // sum_k |e^{lambda_k lag} k_k - q_k|^2
  double arg = 0;    // nu vC + R2 + eps
  double L = 0;      // -log(arg)
  double logit = 0;  // alpha^2 L (0 when alpha = 0)
};
AfaPairTerms afa_pair_terms(const AfaParams& p, int h, const cd* q, const cd* k, double t_i, double t_j);

struct AfaOptions {
  bool want_matrices = false;                // fill AfaOutputs::attn
  const std::vector<double>* horizon = nullptr;  // [B][N] prediction horizons (>= 0); null: pred_dt
  int window = 0;  // causal only: W > 0 lets query i see keys [i - W + 1, i] (a banded mask); 0: all
};

struct AfaOutputs {
  int B = 0, N = 0, H = 0, D = 0;
  std::vector<cd> filtered;     // Z_bar after the optional mix, before the prediction [B][N][H][D]
  std::vector<cd> est;          // the prediction e^{lambda_k h_i} Z_bar [B][N][H][D]
  std::vector<double> attn;     // softmax weights Q_ij [B][H][N][N] (zeros where masked), only with want_matrices
  std::vector<double> row_max;  // max_j logit_ij [B][H][N]
  std::vector<double> row_lse;  // logsumexp_j logit_ij (+inf when some arg is 0)
};

// One AFA layer. t may be empty (t = 0..N-1 for every sequence).
Status afa_forward(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                   const std::vector<cd>& V, const std::vector<double>& t, AfaOutputs* out, const AfaOptions& opt = {});

// Decode: the state of one sequence is every past position's key and value ([n][H][D], as given:
// the twin transports from the lag, so it needs no rotated copies) and timestamp. A step appends
// the new position and answers its row; the result equals afa_forward's row for that position.
struct AfaDecodeState {
  int H = 0, D = 0, n = 0;
  std::vector<cd> K, V;   // [n][H][D]
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
