#include "sources.hpp"

#include <cmath>

#include "model/npy.hpp"

namespace viewer {
namespace {
constexpr double kA[2][2] = {{0.9, -2.0}, {1.0, -1.1}};
constexpr double kH = 0.01;  // Euler step
constexpr double kX0 = 10.0;
using Mat = std::array<double, 4>;
Mat mul(const Mat& a, const Mat& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}
Mat tr(const Mat& a) { return {a[0], a[2], a[1], a[3]}; }
Mat add(const Mat& a, const Mat& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}; }
}  // namespace

void SpiralSource::reset() {
  rng_.seed(seed);
  std::normal_distribution<double> n(0, 1);
  x_[0] = kX0 * n(rng_);
  x_[1] = kX0 * n(rng_);
  t_ = 0;
  first_ = true;
  mu_[0] = mu_[1] = 0;
  P_ = {kX0 * kX0, 0, 0, kX0 * kX0};
}

std::string SpiralSource::describe() const {
  char b[160];
  std::snprintf(b, sizeof b, "spiral: sigma_m %.2f, interval %.3f%s", sigma_m, interval, irregular ? ", irregular" : "");
  return b;
}

void SpiralSource::euler(int steps) {
  std::normal_distribution<double> n(0, 1);
  for (int s = 0; s < steps; ++s) {
    double a = x_[0] + kH * (kA[0][0] * x_[0] + kA[0][1] * x_[1]) + sigma_p * std::sqrt(kH) * n(rng_);
    double b = x_[1] + kH * (kA[1][0] * x_[0] + kA[1][1] * x_[1]) + sigma_p * std::sqrt(kH) * n(rng_);
    x_[0] = a;
    x_[1] = b;
  }
}

SpiralSource::Mat SpiralSource::transition(int steps, Mat* Q) const {
  const Mat M = {1 + kH * kA[0][0], kH * kA[0][1], kH * kA[1][0], 1 + kH * kA[1][1]};
  const double q = sigma_p * sigma_p * kH;
  Mat F = {1, 0, 0, 1}, Qs = {0, 0, 0, 0};
  for (int i = 0; i < steps; ++i) {
    F = mul(M, F);
    Qs = add(mul(mul(M, Qs), tr(M)), Mat{q, 0, 0, q});
  }
  *Q = Qs;
  return F;
}

bool SpiralSource::next(Sample& s) {
  const int nominal = std::max(1, (int)std::lround(interval / kH));
  int steps = nominal;
  if (irregular) steps = std::max(1, (int)std::lround(nominal * std::uniform_real_distribution<double>(0.5, 1.5)(rng_)));
  Mat Q{};
  if (!first_) {
    euler(steps);
    t_ += (double)steps / nominal;
    // Kalman predict over the elapsed steps.
    Mat F = transition(steps, &Q);
    double m0 = F[0] * mu_[0] + F[1] * mu_[1], m1 = F[2] * mu_[0] + F[3] * mu_[1];
    mu_[0] = m0;
    mu_[1] = m1;
    P_ = add(mul(mul(F, P_), tr(F)), Q);
  }
  first_ = false;
  std::normal_distribution<double> n(0, 1);
  double y[2] = {x_[0] + sigma_m * n(rng_), x_[1] + sigma_m * n(rng_)};
  // Kalman update with the new measurement.
  const double r = sigma_m * sigma_m;
  Mat S = {P_[0] + r, P_[1], P_[2], P_[3] + r};
  double det = S[0] * S[3] - S[1] * S[2];
  Mat Si = {S[3] / det, -S[1] / det, -S[2] / det, S[0] / det};
  Mat K = mul(P_, Si);
  double r0 = y[0] - mu_[0], r1 = y[1] - mu_[1];
  mu_[0] += K[0] * r0 + K[1] * r1;
  mu_[1] += K[2] * r0 + K[3] * r1;
  P_ = mul(Mat{1 - K[0], -K[1], -K[2], 1 - K[3]}, P_);
  Mat F = transition(nominal, &Q);
  s.values.assign((size_t)std::max(dims, 1), 0.0f);
  for (int c = 0; c < std::min(dims, 2); ++c) s.values[(size_t)c] = (float)y[c];
  s.t = t_;
  s.has_truth = true;
  s.truth = {x_[0], x_[1]};
  s.kalman_next = {F[0] * mu_[0] + F[1] * mu_[1], F[2] * mu_[0] + F[3] * mu_[1]};
  return true;
}

bool NpySource::open(const std::string& path, int dims, std::string* error) {
  auto a = rfa::read_npy(path);
  if (!a) {
    *error = a.status().to_string();
    return false;
  }
  const auto& shape = a->shape;
  path_ = path;
  dims_ = dims;
  rows_ = shape.empty() ? 1 : (int)shape[0];
  cols_ = shape.size() >= 2 ? (int)shape[1] : 1;
  if (shape.size() > 2 || cols_ < dims) {
    *error = path + ": expected an array [N, " + std::to_string(dims) + "] (one measurement per row)";
    return false;
  }
  data_.clear();
  if (a->is_integer)
    for (int64_t v : a->ints) data_.push_back((double)v);
  else
    data_ = a->values;
  row_ = 0;
  return true;
}

bool NpySource::next(Sample& s) {
  if (row_ >= rows_) return false;
  s.values.resize((size_t)dims_);
  for (int c = 0; c < dims_; ++c) s.values[(size_t)c] = (float)data_[(size_t)row_ * cols_ + c];
  // A column beyond the model's inputs holds timestamps when present.
  s.t = cols_ > dims_ ? data_[(size_t)row_ * cols_ + dims_] : (double)row_;
  s.has_truth = false;
  ++row_;
  return true;
}

}  // namespace viewer
