// The double-precision CPU twin, part 2: the dense ops around the attention
// (docs/reference-code.md §2, §7, §10). Weights are the model's f32 tensors; all arithmetic is double. Activations are row-major
// [rows][dim] std::vector<double>.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "model/model.hpp"

namespace rfa::ref {

using cd = std::complex<double>;

// y = x W^T + b. x: [rows][w.in]; W: [w.out][w.in] row-major f32; b: [w.out] or empty (no bias).
std::vector<double> linear(const LinearWeights& w, const std::vector<double>& x, int rows);

// LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias, population variance.
// An empty weight means 1, an empty bias means 0.
std::vector<double> layer_norm(const std::vector<double>& x, int rows, int dim, double eps,
                               const HostTensor& weight, const HostTensor& bias);
// RMSNorm: x / sqrt(mean(x^2) + eps) * weight (empty weight: 1).
std::vector<double> rms_norm(const std::vector<double>& x, int rows, int dim, double eps, const HostTensor& weight);
// Dispatch on NormWeights::kind; NormKind::none returns x unchanged.
std::vector<double> apply_norm(const NormWeights& n, const std::vector<double>& x, int rows, int dim);

std::vector<double> relu(const std::vector<double>& x);
std::vector<double> add(const std::vector<double>& a, const std::vector<double>& b);
std::vector<double> scale(const std::vector<double>& x, double s);

// The projection split (docs/reference-code.md §2, half-split): q [rows][2*H*D] ->
// Z[row][h][d] = q[row][h*D+d] + i q[row][H*D + h*D + d].
std::vector<cd> split_complex(const std::vector<double>& q, int rows, int H, int D);
// Its inverse, the W_o input: est [rows][H][D] -> [rows][ Re(est) head-major | Im(est) ] (2*H*D).
std::vector<double> pack_complex(const std::vector<cd>& est, int rows, int H, int D);

// Complex RMS norm of one head vector (docs/reference-code.md §2): z / sqrt(mean_d |z_d|^2 + 1e-6) * gain[d].
// gain may be null (gain 1).
void complex_rms_norm(cd* z, int D, const double* gain);
inline constexpr double kComplexNormEps = 1e-6;

}  // namespace rfa::ref
