// The double-precision CPU twin, part 3: one RFA attention layer on complex Q, K, V, written
// straight from the definitions (docs/math.md §2, docs/reference-code.md §2, §4-§8) with std::complex<double>.
//
// It deliberately does NOT repeat the GPU's algebra:
//  * the residual is formed directly, R2 = sum_d |Q_id - E_ij e^{i omega_d (t_i - t_j)} K_jd|^2
//    (equal to |Q~|^2 + E^2 |K~|^2 - 2 E Re(Q~^H K~) of docs/reference-code.md §5.1, since
//    |Q - E e^{i w (ti-tj)} K| = |Q~ - E K~| with Z~ = Z e^{-i w t});
//    cross-only (full_residual = false): R2 = -E Re sum_d conj(Q~_id) K~_jd, also formed from the
//    relative phase e^{i omega (t_i - t_j)};
//  * the value aggregate with counter-rotation is sum_j A_ij e^{i omega (t_i - t_j)} V_j (the same
//    as e^{i omega t_i} sum_j A_ij V~_j), again from the relative phase, so that timestamps around
//    1e6 lose nothing;
//  * every logit, softmax and log-sum-exp is formed per row from the full row in double.
//
// Layouts: Q, K, V, est: [B][N][H][D] complex; t: [B][N]; attention matrices [B][H][N][N];
// per-row statistics [B][H][N].
//
// Lags: causal: lag = t_i - t_j (j <= i by index); non-causal: lag = |t_i - t_j| (as the reference).
// Masked entries have Ahat = A = 0. A row with no unmasked key (possible only with a key mask) has
// row_max = -inf, row_sum = 0, row_lse = energy_lse = -inf, zero attention and a zero aggregate
// (the gate then gives g = 0, i.e. the row's own V_norm), never NaN.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "rfa/params.hpp"
#include "rfa/status.hpp"

namespace rfa::ref {

using cd = std::complex<double>;

struct AttentionOptions {
  bool want_matrices = false;  // fill Ahat and A ([B][H][N][N]; N can be large)
  bool want_stages = false;    // fill AttentionOutputs::stages
  // Optional key mask [B][N]: 0 masks key j for every query of that sequence (padding). Combined
  // with the causal mask. Null: every key is valid.
  const std::vector<uint8_t>* key_valid = nullptr;
  // window > 0 (causal layers): query i sees only keys i - window < j <= i, the banded causal mask
  // of a session with a sliding-window cache. 0: every earlier key.
  int window = 0;
  // ACC layers with learned steps (PhaseSource::accumulated_learned): the token ids [B][N].
  const std::vector<int32_t>* tokens = nullptr;
};

// The intermediate tensors, for checking the GPU kernels one at a time.
struct AttentionStages {
  std::vector<cd> Qn, Kn, Vn;          // after the complex input norm (inputs when it is off) [B][N][H][D]
  std::vector<cd> Qr, Kr, Vr;          // rotated into the stationary frame: Zn e^{-i omega t} [B][N][H][D]
  std::vector<double> q_norm2, k_norm2;  // sum_d |Qn|^2, sum_d |Kn|^2 (rotation-invariant) [B][N][H]
  std::vector<cd> est_stationary;      // sum_j A_ij Vr_j (before the counter-rotation) [B][N][H][D]
  std::vector<cd> est_counter;         // after the counter-rotation (== est_stationary when off)
  std::vector<cd> est_gated;           // after the confidence gate (== est_counter when off)
  std::vector<cd> est_normed;          // after the complex output norm (== est_gated when off)
};

struct AttentionOutputs {
  int B = 0, N = 0, H = 0, D = 0;
  // Final aggregate: counter-rotation, gate, output norm and lag-shift rotation applied; this is
  // what pack_complex() turns into the W_o input.
  std::vector<cd> est;
  std::vector<double> Ahat, A;          // [B][H][N][N], only with want_matrices
  std::vector<double> row_max;          // m = max_j logit_ij over unmasked j   [B][H][N]
  std::vector<double> row_sum;          // l = sum_j exp(logit_ij - m), so Ahat = exp(logit - m) / l
  std::vector<double> row_lse;          // m + log l = logsumexp_j logit_ij (log-partition)
  std::vector<double> energy_lse;       // logsumexp_j energy_ij (precision_marginal_log, the gate's input)
  std::vector<double> decayed_mass;     // sum_j A_ij (<= 1)
  std::vector<double> gate;             // g [B][H][N] when the gate is on, else empty
  AttentionStages stages;               // only with want_stages
};

// One query-key pair, every term of its logit (the viewer's hover readout). q and k are one head's
// D complex values after the complex input norm (not rotated). Masking is the caller's business.
struct PairTerms {
  double lag = 0;       // t_i - t_j (causal) or |t_i - t_j|
  double dt = 0;        // lag + lag_shift
  double E = 0;         // decay
  double vcov = 0;      // covariance
  double B = 0;         // additive bias
  double P = 0;         // precision in the robust / Gaussian term
  double q_norm2 = 0;   // sum_d |q_d|^2
  double k_norm2 = 0;   // sum_d |k_d|^2
  double cross = 0;     // Re sum_d conj(Q~_d) K~_d
  double R2 = 0;        // squared residual (full or cross-only per the switch)
  double L = 0;         // B - kappa log(1 + P R2)  or  B - P R2
  double logit = 0;     // tau L
  double energy = 0;    // B - log(1 + P R2)  or  B - P R2 (no kappa, no tau)
};
// theta_i, theta_j (D angles each, optional): accumulated phases of the two positions
// (AttentionParams::phase != omega_t); the relative rotation is then theta_i - theta_j instead of
// omega (t_i - t_j).
PairTerms pair_terms(const AttentionParams& p, int h, const cd* q, const cd* k, double t_i, double t_j,
                     const double* theta_i = nullptr, const double* theta_j = nullptr);

// The same for pair (i, j) of head h in sequence b of full inputs [B][N][H][D] (the input norm is
// applied here). *masked (optional) reports whether the causal mask hides the pair.
PairTerms pair_terms(const AttentionParams& p, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<double>& t, int b, int h, int i, int j, bool* masked = nullptr);

// Complex input norm and rotations only (the GPU's rotate kernel): fills Qn, Kn, Vn, Qr, Kr, Vr,
// q_norm2, k_norm2 of *st. t may be empty (t = 0..N-1).
Status rotate_inputs(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<cd>& V, const std::vector<double>& t, AttentionStages* st);

// The whole layer on complex inputs. t may be empty (t = 0..N-1 for every sequence).
Status attention(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                 const std::vector<cd>& V, const std::vector<double>& t, AttentionOutputs* out,
                 const AttentionOptions& opt = {});

// Per-row diagnostics from outputs computed with want_matrices (docs/math.md §7):
struct RowDiagnostics {
  std::vector<double> thresholds;     // as given
  std::vector<double> entropy;        // -sum_j Ahat log Ahat                     [B][H][N]
  std::vector<double> log_partition;  // logsumexp_j logit_ij (= row_lse)
  std::vector<double> max_weight;     // max_j Ahat_ij
  std::vector<double> expected_lag;   // sum_j A_ij lag_ij (lag as above: t_i - t_j when causal)
  std::vector<double> mass_beyond;    // [B][H][N][T]: sum over j with lag_ij > thresholds[k] of A_ij
};
Status row_diagnostics(const AttentionParams& p, int B, int N, const std::vector<double>& t,
                       const AttentionOutputs& out, const std::vector<double>& thresholds, RowDiagnostics* diag);

}  // namespace rfa::ref
