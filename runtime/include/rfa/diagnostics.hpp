// Attention tomography: the Laplace-Radon and routing diagnostics of one head over a window of
// rows (docs/DIAGNOSTICS.md §3; "Attention as a Laplace-Radon transform", sections 12-13). docs/DIAGNOSTICS.md says
// what q, k, u, tau, s and d are for each RFA variant. All logarithms are natural.
//
// Where each part runs: the per-pair work (every logit of every row, the row statistics, the
// window of P) on the GPU, recomputed from the session's caches like the attention probes; the
// small dense linear algebra (singular values of P, eigenvalues of the d x d tilt covariance and
// of the normals' Gram form) on the host in double (DiagnosticsTimings says what each cost).
#pragma once

#include "rfa/export.h"

#include <cstdint>
#include <vector>

#include "rfa/params.hpp"
#include "rfa/status.hpp"

namespace rfa {

// What Session::head_diagnostics computes.
struct DiagnosticsRequest {
  int layer = 0, head = 0, b = 0;
  // Query rows [r0, r1) and key columns [c0, c1) of P, absolute positions. r1 < 0 (c1 < 0): through
  // the newest position; r0 < 0 (c0 < 0): the last -r0 (-c0) positions before r1 (c1). Rows must
  // be in the cache with all of their keys (a causal row of a sliding-window ring: its whole band).
  int r0 = 0, r1 = -1, c0 = 0, c1 = -1;
  double alpha = 1.0;           // temperature: logits scaled by alpha (eq. 30); finite, > 0
  std::vector<double> sweep;    // more temperatures, one SweepPoint each (at most 64)
  bool decayed = false;         // spectrum of A = Ahat E instead of Ahat (RFA heads with decay)
  bool spectrum = true;         // singular values of P (host, O(n^3)); rows, cols <= 1024
  bool keep_tilts = false;      // fill HeadDiagnostics::tilts
  // AFA layers: the weights whose logs are the logits (rfa/params.hpp kAllChannels, kReweighting or a
  // channel; docs/variant-afa-full.md §5). Other mechanisms: kAllChannels only.
  int channel = kAllChannels;
};

// One query row i at the request's alpha, over every key the row attends to.
struct QueryDiagnostics {
  int position = 0;
  int keys = 0;                   // keys in the row's softmax
  double q_norm = 0;              // |q_i|
  double tau = 0;                 // |q_i| / sqrt(d)   (radius, L2)
  double entropy = 0;             // -sum_j p_ij log p_ij
  double log_partition = 0;       // log sum_j exp(alpha logit_ij)
  double max_weight = 0;          // max_j p_ij
  double mean_s = 0, var_s = 0;   // E_p[s], Var_p[s] of s_ij = u_i . k_j (eq. 51: d/dtau, d2/dtau2 log Z)
  double mean_logit = 0, var_logit = 0;  // E_p, Var_p of the unscaled logit (d/dalpha, d2/dalpha2 log Z, / alpha^k)
  double expected_lag = 0;        // sum_j p_ij lag_ij
};

// Sums over queries and keys that merge by addition, so tilt statistics can pool over windows,
// batch rows or a growing stream (C_u = E[u u^T] takes rank-one updates, docs/DIAGNOSTICS.md §3).
struct HeadMoments {
  int d = 0;                       // real dimension of q and k (2D for a head of D complex dims)
  int d_token = 0;                 // dimension of W_k's input (d_e); 0 when key_gram is empty
  int64_t queries = 0, keys = 0, logits = 0;
  std::vector<double> uu;          // [d*d] sum_i u_i u_i^T, u in the stationary frame
  std::vector<double> uu0;         // [d*d] sum_i u0_i u0_i^T, u0 = u rotated to the query's own time
  std::vector<double> q_sum, q_sq; // [d] per-dim sums of q and q^2
  std::vector<double> k_sum, k_sq; // [d] the same over keys
  double tau_sum = 0, tau_sq = 0;
  double logit_sum = 0, logit_sq = 0;  // over every (query, key) pair of the rows (unscaled)
  std::vector<double> key_gram;    // [d*d] W W^T of the head's key map (normals n = W^T u0); not summed
};
// into += more. Both must have the same d and key_gram (or `into` be empty, d = 0).
RFA_API Status accumulate(HeadMoments& into, const HeadMoments& more);

struct MomentSummary {
  double var_q = 0, var_k = 0;            // mean over dims of the per-dim variance
  double tau_mean = 0, tau_std = 0;
  double tau_chi_mean = 0;                // sqrt(var_q / d) sqrt(2) Gamma((d+1)/2) / Gamma(d/2)
  double logit_std = 0;                   // over every pair (unweighted)
  double logit_std_meanfield = 0;         // sqrt(var_q var_k) (eq. 63, dot-product logits)
  std::vector<double> tilt_spectrum;      // eigenvalues of C_u = E[u u^T], descending (d)
  double dim_eff_u = 0;                   // (sum lambda)^2 / sum lambda^2
  std::vector<double> normal_spectrum;    // eigenvalues of C_n = E[n n^T], n = W^T u0 (nonzero part, d)
  double dim_eff_n = 0;
};
RFA_API Result<MomentSummary> summarize(const HeadMoments& m);

// One temperature of the sweep, over the window's rows.
struct SweepPoint {
  double alpha = 1;
  double entropy = 0, max_weight = 0;     // means over rows
  double erank = 0;                       // effective rank of P(alpha) (0 without a spectrum)
  int rank = 0;
  std::vector<double> singular_values;    // of P(alpha), descending (empty without a spectrum)
};

struct DiagnosticsTimings {
  double gpu_ms = 0;        // the tomography dispatches (0 when the device has no timestamps)
  double svd_ms = 0;        // host: singular values of every P (main alpha and sweep)
  double eigen_ms = 0;      // host: eigenvalues of C_u and of the normals' form
  double host_ms = 0;       // host: everything after the downloads (includes svd_ms, eigen_ms)
  double wall_ms = 0;       // the whole call
};

struct HeadDiagnostics {
  int layer = 0, head = 0, b = 0;
  int r0 = 0, r1 = 0, c0 = 0, c1 = 0;     // the window actually used (absolute positions)
  double alpha = 1;
  bool decayed = false;
  int d = 0;                              // real dims of q / k
  std::vector<QueryDiagnostics> rows;     // [r1 - r0]
  double entropy_mean = 0, max_weight_mean = 0;
  // The attention matrix P (rows x cols at alpha): singular values, descending; Roy-Vetterli
  // effective rank exp(-sum p log p), p = sigma / sum sigma; numerical rank (tolerance
  // max(rows, cols) sigma_1 2^-23, P is fp32) and dim ker P = cols - rank.
  std::vector<double> singular_values;
  double erank = 0;
  int rank = 0, nullity = 0;
  std::vector<double> tilts;              // [rows][d] u_i (stationary frame), with keep_tilts
  HeadMoments moments;                    // over the window (merge with accumulate())
  MomentSummary summary;                  // of `moments`
  std::vector<SweepPoint> sweep;          // one per requested sweep alpha
  DiagnosticsTimings timings;
};

// The host linear algebra the diagnostics use, for data from elsewhere (row-major, double).
RFA_API Result<std::vector<double>> singular_values(const std::vector<double>& a, int rows, int cols);
RFA_API double effective_rank(const std::vector<double>& singular_values);      // Roy-Vetterli
RFA_API double participation_ratio(const std::vector<double>& eigenvalues);     // (sum l)^2 / sum l^2

}  // namespace rfa
