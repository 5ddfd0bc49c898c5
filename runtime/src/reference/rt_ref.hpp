// The double-precision CPU twin of RT-RFA: directional Robust Filter Attention on the sphere, the
// attention of "RT-Transformer: The Transformer Block as a Spherical State Estimator". The contract
// is docs/variant-rt.md (section numbers below are that page's); this file is the tests' oracle for
// it. Like the RFA twin (attention_ref.hpp) it favours the plain definition over speed and shares
// no code with any GPU path.
//
// What it deliberately does NOT take from the kernel's algebra (so that it can check it):
//  * every decay, covariance and rotation is formed from the lag of the pair itself: the
//    magnitude decay e^{-mu |t_i - t_j|}, and the transport e^{i omega (t_i - t_j)} applied to the
//    UNROTATED unit key and value (the kernel rotates every token into the stationary frame by
//    e^{-i omega t} and counter-rotates; at t ~ 1e6 only the relative phase is safe);
//  * the directional residual is the squared distance between the query direction and the
//    transported key direction, R2 = sum_d |qh_d - e^{i omega_d (t_i - t_j)} kh_d|^2, formed
//    directly (the kernel's 2 - 2c is the same number for unit vectors);
//  * the precision is always formed in the log domain (section 3.2), which never overflows.
//
// Layouts (as the RFA twin): Q, K, V and every per-token complex output [B][N][H][D]; timestamps
// [B][N] (empty: t = 0..N-1); per-token scalars [B][N][H]; attention matrices [B][H][N][N];
// per-row statistics [B][H][N]. The decode state stores positions first ([len][B][...]) so a step
// appends.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rfa/params.hpp"
#include "rfa/status.hpp"

namespace rfa::ref {

using cd = std::complex<double>;

// How the tangential covariance S(l) of a transported key is formed (section 3.2) and the score
// kernel (section 3.3): rfa::RtCovariance (stationary: the paper's Algorithm 1; ou_rate: the rate
// form, phi = -expm1(-2 mu_t l) / (2 mu_t), l at mu_t = 0) and rfa::RtKernel (student_t: L = log P
// - kappa log(1 + d2 / nu), kappa = (nu + D) / D; gaussian: L = log P - d2).
using RtCovariance = rfa::RtCovariance;
using RtKernel = rfa::RtKernel;

// Where directions and magnitudes are taken (section 6, decision 3).
enum class RtNormScope : uint32_t {
  per_head = 0,  // each head's D-vector normalised on its own; m = |V| of the head
  global = 1,    // the whole H*D vector normalised; m = |V| over all heads, shared by them
};

struct RtHeadParams {
  double mu = 0;               // magnitude decay: M_hat_ij = M_j e^{-mu |t_i - t_j|} (the paper's mu_r)
  std::optional<double> mu_t;  // decay inside S(l) (the paper's mu_t); unset: mu
  double s2t = 0;              // stationary tangential variance (covariance = stationary)
  double sigma2 = 0;           // tangential process-noise rate (covariance = ou_rate)
  double eta2 = 0;             // key measurement noise
  double gamma2 = 0;           // query measurement noise
  double tau_th2 = 0.01;       // angular noise floor, > 0 (bounds P by 1 / tau_th2)
  double nu = 4;               // Student-t degrees of freedom (student_t kernel only)
  double beta = 1;             // beta_s: inverse temperature on the whole logit
  std::vector<double> omega;   // [D] rotation frequency of each complex dim
};

struct RtParams {
  int heads = 1;
  int dim = 1;  // D: complex dims per head
  RtCovariance covariance = RtCovariance::stationary;
  RtKernel kernel = RtKernel::student_t;
  RtNormScope norm_scope = RtNormScope::per_head;
  bool causal = true;      // causal mask (j <= i); timestamps must then be non-decreasing
  double eps_m2 = 1e-6;    // added to every squared magnitude: m^2 + eps
  double eps_norm = 1e-12; // unit normalisation x / max(|x|, eps_norm)
  std::vector<RtHeadParams> head;  // [heads]
};

// Scalar helpers. They assume parameters that rt_attention accepts and 0 <= h < heads (no checks).
//
// The head's Student-t exponent (nu + D) / D (section 6, decision 11).
double rt_kappa(const RtParams& p, int h);
// mu_t of the head (mu when unset).
double rt_mu_t(const RtParams& p, int h);
// S(l) for a lag l >= 0 (section 3.2).
double rt_cov(const RtParams& p, int h, double lag);
// log P for one pair from the magnitudes and the lag, in the overflow-free form of section 3.2:
//   log P = log(m_j^2 + eps) - 2 mu l - log( S(l) + (a_i + tau_th2)(m_j^2 + eps) e^{-2 mu l} ),
//   a_i = S(0) / (m_i^2 + eps)  (0 when S(0) = 0).
// -inf when m_j^2 + eps = 0 or m_i^2 + eps = 0 < S(0) (the key carries no directional information).
double rt_log_precision(const RtParams& p, int h, double m_i, double m_j, double lag);

// Every term of one pair (the viewer's hover; the hand values of section 9). R2 is the squared
// distance between the query direction and the transported key direction (2 - 2c for unit vectors).
struct RtPairTerms {
  double lag = 0;        // |t_i - t_j|
  double E = 0;          // e^{-mu lag}: the magnitude decay M_hat / M
  double S0 = 0;         // S(0) = eta2 + gamma2
  double S = 0;          // S(lag)
  double query_term = 0; // a_i = S(0) / (m_i^2 + eps)
  double key_term = 0;   // S(lag) / ((m_j^2 + eps) E^2) (may be +inf where E^2 underflows; P does not care)
  double log_P = 0;      // log-domain precision
  double P = 0;          // exp(log_P) <= 1 / tau_th2
  double R2 = 0;         // as given
  double c = 0;          // 1 - R2 / 2 (the cosine for unit vectors)
  double d2 = 0;         // P R2: whitened squared angular distance
  double w = 0;          // robust weight (1 + d2 / nu)^-kappa (exp(-d2) for the Gaussian kernel)
  double L = 0;          // log P - kappa log(1 + d2 / nu)  or  log P - d2
  double logit = 0;      // beta L
  double validity = 0;   // (sigma_t / m_j) sqrt(lag): small-angular-diffusion check (section 10)
};
RtPairTerms rt_pair_terms(const RtParams& p, int h, double m_i, double m_j, double lag, double R2);

struct RtOptions {
  bool want_matrices = false;  // fill A, log_P and d2 ([B][H][N][N])
  // Optional key mask [B][N]: 0 hides key j from every query of sequence b (padding). Combined
  // with the causal mask; a row with no visible key gives zeros.
  const std::vector<uint8_t>* key_valid = nullptr;
  int window = 0;  // causal only: W > 0 lets query i see keys [i - W + 1, i] (a banded mask); 0: all
};

struct RtOutputs {
  int B = 0, N = 0, H = 0, D = 0;
  // Unit directions (unrotated) and magnitudes from the prologue (section 3.1).
  std::vector<cd> q_hat, k_hat, v_hat;  // [B][N][H][D]
  std::vector<double> m;                // |V| (per head, or global and repeated per head) [B][N][H]
  std::vector<double> log_m2;           // log(m^2 + eps), the one number a KV cache keeps per key
  std::vector<double> angular_variance; // a = S(0) / (m^2 + eps) [B][N][H]
  // The layer's outputs (section 3.4).
  std::vector<cd> ubar;    // consensus: sum_j A_ij e^{i omega (t_i - t_j)} vh_j, |ubar| <= 1  [B][N][H][D]
  std::vector<cd> u_star;  // the normalised estimate ubar / |ubar| (zero where ubar = 0)      [B][N][H][D]
  std::vector<cd> T;       // the tangent update: ubar minus its component along vh_i          [B][N][H][D]
  // Per-row softmax statistics of the logits beta L.
  std::vector<double> row_max, row_sum, row_lse;  // [B][H][N]; fully masked: -inf, 0, -inf
  // Per-row diagnostics (section 10), per head.
  std::vector<double> concentration;  // |ubar_i|
  std::vector<double> agreement;      // Re(vh_i^H ubar_i)
  std::vector<double> angular_step;   // |T_i| / sqrt(m_i^2 + eps)
  // Only with want_matrices: masked entries have A = 0, log_P = -inf, d2 = 0.
  std::vector<double> A, log_P, d2;   // [B][H][N][N]
};

// The whole RT attention layer on complex Q, K, V (after the projections).
Status rt_attention(const RtParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                    const std::vector<cd>& V, const std::vector<double>& t, RtOutputs* out,
                    const RtOptions& opt = {});

// Decode step (section 7). The state keeps, per cached position, the unit key and value
// directions (unrotated: the twin transports them by the lag), log(m^2 + eps) and the timestamp.
struct RtDecodeState {
  int B = 0, H = 0, D = 0;
  int len = 0;                    // cached positions
  std::vector<cd> k_hat, v_hat;   // [len][B][H][D]
  std::vector<double> log_m2;     // [len][B][H]
  std::vector<double> t;          // [len][B]
};
// An empty state for B sequences of a causal layer.
Status rt_decode_init(const RtParams& p, int B, RtDecodeState* st);
// Appends one position to every sequence and attends it over the cache (itself included).
// q, k, v: [B][H][D]; t_new: [B] (>= each sequence's last timestamp). *out is filled as
// rt_attention's outputs with N = 1 (no matrices); it equals row `len` of a prefill.
Status rt_decode_step(const RtParams& p, RtDecodeState* st, const std::vector<cd>& q, const std::vector<cd>& k,
                      const std::vector<cd>& v, const std::vector<double>& t_new, RtOutputs* out);

// The block around the layer (section 3.5), up to the FFN, which is an ordinary MLP of the runtime:
//   Z+ = Z + W_o [Re T ; Im T] + b_o,   U+ = RMSNorm(Z+) = Z+ / sqrt(mean(Z+^2) + eps) * gain.
// [Re T ; Im T] is the RFA half-split packing: all heads' real parts, then all imaginary parts.
struct RtBlockWeights {
  int d_model = 0;
  std::vector<double> W_o;       // [d_model][2 H D] row-major
  std::vector<double> b_o;       // [d_model] or empty (0)
  std::vector<double> rms_gain;  // [d_model] or empty (1)
  double rms_eps = 1e-6;
};
Status rt_residual(const RtParams& p, const RtBlockWeights& w, int B, int N, const std::vector<double>& Z,
                   const std::vector<cd>& T, std::vector<double>* Z_plus, std::vector<double>* U_plus);

// A model's RT layer (rfa::AttentionParams with variant rt, docs/variant-rt.md §13) in this twin's
// form: per-head scope, mu_t unset (= mu).
RtParams rt_twin_params(const AttentionParams& p);

// Host diagnostics of one head (section 10).
struct RtHeadSummary {
  double kappa = 0;          // (nu + D) / D
  double S0 = 0;             // eta2 + gamma2
  double sigma_t2 = 0;       // tangential diffusion rate: 2 mu_t s2t (stationary) or sigma2 (ou_rate)
  double m_min = 0;          // magnitude floor sqrt(sigma_t2 (2D - 1) / mu) (+inf at mu = 0 with sigma_t2 > 0)
  double alibi_slope = 0;    // 2 mu beta: the long-lag slope of -beta log P
  double stationary_variance = 0;  // s2t, or sigma2 / (2 mu_t) (+inf when Brownian)
  double alpha = 0, beta_reg = 0;  // eta2 - sv, gamma2 + sv (the regime of S, docs/math.md)
  std::string regime;        // "diffusive", "integrative" or "brownian" (of S(l), not of P)
};
RtHeadSummary rt_head_summary(const RtParams& p, int h);
// log P(l) at m_i = m_j = m over the given lags: the head's precision kernel.
std::vector<double> rt_precision_kernel(const RtParams& p, int h, double m, const std::vector<double>& lags);
// (sigma_t / m_j) sqrt(lag).
double rt_validity(const RtParams& p, int h, double m_j, double lag);

}  // namespace rfa::ref
