// Inside the AFA twin (not installed, not for callers): one query row of each form against its
// keys, the aggregate Zbar before the mix, shared by the prefill and the decode step
// (afa_layer_ref.cpp), which add the mix, the tied iterations and the prediction; and the checks and
// helpers the twin's files share.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "reference/afa_ref.hpp"

namespace rfa::ref::detail {

// What a row writes; null pointers are not written.
struct AfaRowOut {
  cd* zbar = nullptr;              // [D]
  double* attn = nullptr;          // [nk]: the softmax (memory-optimised) or (1/D) sum_k Q_k (full)
  double* channel_attn = nullptr;  // full: Q_k,ij at channel_attn[k * channel_stride + j]
  size_t channel_stride = 0;
  double* reweight = nullptr;      // full: W_ij [nk]
  double* den = nullptr;           // full: den_k [D]
  double row_max = 0, row_lse = 0;
};

// Query q (head h's D values) at time ti against keys and values j < nk at K + j * stride,
// V + j * stride, times tk[j].
void afa_softmax_row(const AfaParams& p, int h, const cd* q, double ti, int nk, const cd* K, const cd* V,
                     size_t stride, const double* tk, AfaRowOut* o);
void afa_full_row(const AfaParams& p, int h, const cd* q, double ti, int nk, const cd* K, const cd* V,
                  size_t stride, const double* tk, AfaRowOut* o);

size_t afa_at(const AfaParams& p, int h, int k);
double afa_sigmoid(double x);
// e^{lambda_k l} formed from the lag (the decay from |l|, the phase from the signed l).
cd afa_transport(const AfaParams& p, int h, int k, double lag);
// Channel k of a query or key as the layer scores it: projected to unit modulus under the unitary switch.
cd afa_scored(const AfaParams& p, cd z);
double afa_time_of(const std::vector<double>& t, int N, int b, int i);
Status afa_bad(const std::string& msg);
Status afa_check_inputs(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                        const std::vector<cd>& V, const std::vector<double>& t);
Status afa_check_horizon(double h, const std::string& where);

}  // namespace rfa::ref::detail
