// The full (anisotropic) form of AFA in the twin (docs/variant-afa-full.md §2; equations A3-A8 of
// the seeds page), every term as defined and in double: per pair and channel the decay, covariance
// and precision from the pair's own lag, the residual of the key transported to the query's time,
// one Mahalanobis reweighting W per pair, and per channel its own normaliser over the row (no
// softmax, no running maximum: every weight is positive and bounded).
#include <cmath>
#include <limits>
#include <vector>

#include "reference/afa_ref.hpp"
#include "reference/afa_rows.hpp"

namespace rfa::ref {

using detail::afa_at;

AfaFullPairTerms afa_full_pair_terms(const AfaParams& p, int h, const cd* q, const cd* k, double t_i, double t_j) {
  const AfaHeadParams& hp = p.head[(size_t)h];
  const int D = p.dim;
  AfaFullPairTerms r;
  r.lag = t_i - t_j;
  r.E.resize((size_t)D);
  r.cov.resize((size_t)D);
  r.P.resize((size_t)D);
  r.r.resize((size_t)D);
  r.WP.resize((size_t)D);
  for (int c = 0; c < D; ++c) {
    const AfaChannelKernel ck = afa_channel_kernel(p, h, c, r.lag);                 // (A3), (A4)
    r.E[(size_t)c] = ck.E;
    r.cov[(size_t)c] = ck.cov;
    r.P[(size_t)c] = 1.0 / (ck.cov + hp.eps);                                       // > 0: afa_check_params
    r.r[(size_t)c] = detail::afa_transport(p, h, c, r.lag) * detail::afa_scored(p, k[c]) -
                     detail::afa_scored(p, q[c]);                                   // (A5)
    r.D2 += r.P[(size_t)c] * std::norm(r.r[(size_t)c]);                             // (A6)
  }
  // W = (1 + D2 / nu)^(-alpha^2): the thesis's 1 / (1 + D2) at nu = alpha = 1; alpha = 0 leaves the
  // precisions alone (W = 1), an infinite D2 gives W = 0.
  const double a2 = hp.alpha * hp.alpha;
  r.W = a2 == 0.0 ? 1.0 : std::pow(1.0 + r.D2 / hp.nu, -a2);
  for (int c = 0; c < D; ++c) r.WP[(size_t)c] = r.W * r.P[(size_t)c];
  return r;
}

namespace detail {

// One query row of the full form: per channel k, Q_k,ij = W_ij P_k(l_ij) / den_k with
// den_k = sum_j W_ij P_k(l_ij) (A7), and Zbar_ik = sum_j Q_k,ij e^{lambda_k l_ij} V_jk (A8). The
// row statistics the GPU keeps: row_max = 0 (no maximum is needed) and row_lse = (1/D) sum_k log den_k.
void afa_full_row(const AfaParams& p, int h, const cd* q, double ti, int nk, const cd* K, const cd* V,
                  size_t stride, const double* tk, AfaRowOut* o) {
  const int D = p.dim;
  std::vector<AfaFullPairTerms> pairs((size_t)nk);
  for (int j = 0; j < nk; ++j) pairs[(size_t)j] = afa_full_pair_terms(p, h, q, K + (size_t)j * stride, ti, tk[j]);
  double mean_log_den = 0.0;
  if (o->attn)
    for (int j = 0; j < nk; ++j) o->attn[j] = 0.0;
  for (int k = 0; k < D; ++k) {
    double den = 0.0;
    for (int j = 0; j < nk; ++j) den += pairs[(size_t)j].WP[(size_t)k];
    cd acc(0.0, 0.0);
    for (int j = 0; j < nk; ++j) {
      // A row whose every weight underflowed (den = 0) has no estimate: zeros, never NaN.
      const double w = den > 0.0 ? pairs[(size_t)j].WP[(size_t)k] / den : 0.0;
      acc += w * afa_transport(p, h, k, ti - tk[j]) * V[(size_t)j * stride + k];
      if (o->channel_attn) o->channel_attn[(size_t)k * o->channel_stride + (size_t)j] = w;
      if (o->attn) o->attn[j] += w / D;
    }
    o->zbar[k] = acc;
    if (o->den) o->den[k] = den;
    mean_log_den += std::log(den) / D;
  }
  if (o->reweight)
    for (int j = 0; j < nk; ++j) o->reweight[j] = pairs[(size_t)j].W;
  o->row_max = 0.0;
  o->row_lse = nk > 0 ? mean_log_den : -std::numeric_limits<double>::infinity();
}

}  // namespace detail

}  // namespace rfa::ref
