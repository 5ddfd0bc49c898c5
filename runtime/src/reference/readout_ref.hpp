// The double-precision twin of the readouts an AFA or RT-RFA head shares with RFA heads: the row
// diagnostics of the probes (docs/math.md §7: entropy, log-partition, largest weight, expected
// lag, mass beyond lag thresholds) and the per-row part of the attention tomography
// (docs/DIAGNOSTICS.md §2, §3: tau, E_p[s], Var_p[s], the logit's moments, P at a temperature).
// The GPU computes them from its caches in the kernels' frame (shaders/afa_probe*, rt_probe*,
// afa_tomography*, rt_tomography*); this twin forms every term from the layer's raw Q, K, V and
// timestamps through the variants' own twins (afa_pair_terms, rt_pair_terms), rotating by the
// pair's lag rather than into a stationary frame.
#pragma once

#include <vector>

#include "reference/afa_ref.hpp"
#include "reference/rt_ref.hpp"
#include "rfa/status.hpp"

namespace rfa::ref {

// One key of a query row as the readouts see it.
struct ReadoutKey {
  int j = 0;          // key position
  double logit = 0;   // the head's own logit: AFA alpha^2 L, RT-RFA beta_s L
  double s = 0;       // u_i . k_j: the plain projection of the scored key on the query's tilt
  double lag = 0;     // |t_i - t_j|
  double decay = 1;   // A_ij / Ahat_ij of the head's probe: AFA (1/D) sum_k e^{-mu_k |lag|}, RT-RFA 1
};

// Query row i of head h of one sequence: what the head scores with and every key it attends to.
struct ReadoutRow {
  int i = 0;
  double q_norm = 0;             // |q_i| of the scored query (AFA unitary: channels projected; RT: 1 or 0)
  std::vector<double> u;         // [2D] the tilt q_i / |q_i| in the stationary frame e^{-i omega t_i}
                                 // (Re, Im per complex dim; zeros for a zero query)
  std::vector<ReadoutKey> keys;  // in key order; an RT key with logit -inf (no direction) is left out
};

// Row i of (b, h) of an AFA layer from raw Q, K ([B][N][H][D]) and t ([B][N], empty: 0..N-1);
// window > 0 (causal layers) limits the row to keys [i - window + 1, i]. `view` (rfa/params.hpp
// kAllChannels, kReweighting or a channel; docs/variant-afa-full.md §5) picks the weights: the
// memory-optimised form's logit is its own in every view and the decay its view's (the channel mean,
// e_c, or 1); the full form's "logit" is log(the view's weight) + (1/D) sum_k log den_k (so
// readout_stats' softmax gives the view's weights back and its log-partition the kernel's), the decay
// the view's (sum_k Q_k e_k / sum_k Q_k over the view's channels, or 1 for W).
Status afa_readout_row(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                       const std::vector<double>& t, int window, int b, int h, int i, ReadoutRow* out,
                       int view = kAllChannels);
// The same for an RT-RFA layer (per-head scope); V gives the magnitudes.
Status rt_readout_row(const RtParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                      const std::vector<cd>& V, const std::vector<double>& t, int window, int b, int h, int i,
                      ReadoutRow* out);

// A row's statistics at temperature alpha (logits scaled by alpha; alpha = 1 gives the probes'
// weights): p_j = softmax_j(alpha logit_j).
struct ReadoutStats {
  int keys = 0;
  double entropy = 0;                      // -sum p log p
  double log_partition = 0;                // log sum exp(alpha logit)
  double max_weight = 0;                   // max p
  double mean_s = 0, var_s = 0;            // E_p[s], Var_p[s]
  double mean_logit = 0, var_logit = 0;    // E_p, Var_p of the unscaled logit
  double uniform_mean = 0, uniform_var = 0;  // unweighted mean and (population) variance of the logits
  double expected_lag = 0;                 // sum p lag (the tomography's)
  double decayed_lag = 0;                  // sum p decay lag (the probes' row diagnostics: A = p decay)
  double mass_beyond[4] = {0, 0, 0, 0};    // sum of p decay over keys with lag > thresholds[k]
  double tau = 0;                          // |q_i| / sqrt(2D)
  std::vector<double> p;                   // [keys], in the row's key order
};
ReadoutStats readout_stats(const ReadoutRow& row, double alpha, int dim, const double thresholds[4]);

}  // namespace rfa::ref
