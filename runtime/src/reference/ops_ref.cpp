#include "reference/ops_ref.hpp"

#include <cmath>

namespace rfa::ref {

std::vector<double> linear(const LinearWeights& w, const std::vector<double>& x, int rows) {
  std::vector<double> y((size_t)rows * (size_t)w.out);
  const bool has_bias = !w.bias.data.empty();
  for (int r = 0; r < rows; ++r) {
    const double* xr = x.data() + (size_t)r * (size_t)w.in;
    for (int o = 0; o < w.out; ++o) {
      const float* wr = w.weight.data.data() + (size_t)o * (size_t)w.in;
      double acc = 0.0;
      for (int i = 0; i < w.in; ++i) acc += (double)wr[i] * xr[i];
      if (has_bias) acc += (double)w.bias.data[(size_t)o];
      y[(size_t)r * (size_t)w.out + (size_t)o] = acc;
    }
  }
  return y;
}

std::vector<double> layer_norm(const std::vector<double>& x, int rows, int dim, double eps,
                               const HostTensor& weight, const HostTensor& bias) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* xr = x.data() + (size_t)r * (size_t)dim;
    double mean = 0.0;
    for (int i = 0; i < dim; ++i) mean += xr[i];
    mean /= dim;
    double var = 0.0;
    for (int i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= dim;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int i = 0; i < dim; ++i) {
      double v = (xr[i] - mean) * inv;
      if (!weight.data.empty()) v *= (double)weight.data[(size_t)i];
      if (!bias.data.empty()) v += (double)bias.data[(size_t)i];
      y[(size_t)r * (size_t)dim + (size_t)i] = v;
    }
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, int rows, int dim, double eps, const HostTensor& weight) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* xr = x.data() + (size_t)r * (size_t)dim;
    double ms = 0.0;
    for (int i = 0; i < dim; ++i) ms += xr[i] * xr[i];
    ms /= dim;
    const double inv = 1.0 / std::sqrt(ms + eps);
    for (int i = 0; i < dim; ++i) {
      double v = xr[i] * inv;
      if (!weight.data.empty()) v *= (double)weight.data[(size_t)i];
      y[(size_t)r * (size_t)dim + (size_t)i] = v;
    }
  }
  return y;
}

std::vector<double> apply_norm(const NormWeights& n, const std::vector<double>& x, int rows, int dim) {
  switch (n.kind) {
    case NormKind::layer_norm: return layer_norm(x, rows, dim, n.eps, n.weight, n.bias);
    case NormKind::rms_norm: return rms_norm(x, rows, dim, n.eps, n.weight);
    case NormKind::none: return x;
  }
  return x;
}

std::vector<double> relu(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0.0 ? x[i] : 0.0;
  return y;
}

std::vector<double> add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

std::vector<double> scale(const std::vector<double>& x, double s) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s;
  return y;
}

std::vector<cd> split_complex(const std::vector<double>& q, int rows, int H, int D) {
  const size_t HD = (size_t)H * (size_t)D;
  std::vector<cd> z((size_t)rows * HD);
  for (int r = 0; r < rows; ++r) {
    const double* qr = q.data() + (size_t)r * 2 * HD;
    for (size_t k = 0; k < HD; ++k) z[(size_t)r * HD + k] = cd(qr[k], qr[HD + k]);
  }
  return z;
}

std::vector<double> pack_complex(const std::vector<cd>& est, int rows, int H, int D) {
  const size_t HD = (size_t)H * (size_t)D;
  std::vector<double> y((size_t)rows * 2 * HD);
  for (int r = 0; r < rows; ++r) {
    double* yr = y.data() + (size_t)r * 2 * HD;
    for (size_t k = 0; k < HD; ++k) {
      yr[k] = est[(size_t)r * HD + k].real();
      yr[HD + k] = est[(size_t)r * HD + k].imag();
    }
  }
  return y;
}

void complex_rms_norm(cd* z, int D, const double* gain) {
  double ms = 0.0;
  for (int d = 0; d < D; ++d) ms += std::norm(z[d]);
  ms /= D;
  const double inv = 1.0 / std::sqrt(ms + kComplexNormEps);
  for (int d = 0; d < D; ++d) z[d] *= inv * (gain ? gain[d] : 1.0);
}

}  // namespace rfa::ref
