// The damped spiral of the Adaptive Filter Attention thesis as a live measurement source, with the
// exact Kalman filter of its simulation beside it: the data the bundled spiral-filter model was
// trained on (models/train/spiral.py), for demos, the viewer and tests.
//
// dx = A x dt + sigma_p dW, A = [[0.9, -2], [1, -1.1]] (eigenvalues -0.1 +/- i), simulated exactly
// as Euler-Maruyama with h = 0.01; a measurement y = x + sigma_m e every `interval` time units
// (10 Euler steps by default), or after irregular gaps of U{interval/5 .. 2 interval} steps.
// Timestamps are in units of the nominal interval, as the model was trained.
//
// Header-only: demo data is no part of librfa (apps that want it include this header; the
// library exports nothing of it).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace rfa {

class SpiralSimulator {
 public:
  struct Options {
    double sigma_m = 1.0, sigma_p = 0.1;
    double interval = 0.1;  // nominal time between measurements
    bool irregular = false;
    uint64_t seed = 2026;
  };
  struct Measurement {
    std::array<double, 2> y{};            // the noisy measurement
    double t = 0;                         // its timestamp, in nominal intervals
    std::array<double, 2> truth{};        // the true state at t
    std::array<double, 2> kalman_next{};  // the Kalman filter's prediction of the state at t + 1
    std::array<double, 2> truth_ahead{};  // the true state at t + 1 (trajectory() only: the target
                                          // the bundled model was trained to predict)
  };

  SpiralSimulator();
  explicit SpiralSimulator(const Options& o);
  void reset();  // back to the first measurement of the seed's trajectory
  Measurement next();
  // A whole trajectory of n measurements, simulated as models/train/spiral.py does (the path first,
  // then measurements, then the filter), with truth_ahead filled. Independent of next()'s stream.
  std::vector<Measurement> trajectory(int n);
  const Options& options() const { return o_; }
  void set_options(const Options& o) { o_ = o; }  // applies to the following measurements

 private:
  using Mat = std::array<double, 4>;  // row-major 2x2
  int nominal_steps() const;
  void euler(int steps);
  Mat transition(int steps, Mat* Q) const;

  Options o_;
  std::mt19937_64 rng_;
  std::array<double, 2> x_{};
  double t_ = 0;
  bool first_ = true;
  std::array<double, 2> mu_{};  // Kalman mean and covariance
  Mat P_{};
};

// The definitions, inline.
namespace spiral_detail {

inline constexpr double kA[2][2] = {{0.9, -2.0}, {1.0, -1.1}};
inline constexpr double kH = 0.01;  // Euler step
inline constexpr double kX0 = 10.0;  // x(0) ~ 10 N(0, I), and the Kalman prior N(0, 100 I)

using Mat = std::array<double, 4>;
inline Mat mul(const Mat& a, const Mat& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}
inline Mat tr(const Mat& a) { return {a[0], a[2], a[1], a[3]}; }
inline Mat add(const Mat& a, const Mat& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}; }
inline std::array<double, 2> mat_vec(const Mat& a, const std::array<double, 2>& v) {
  return {a[0] * v[0] + a[1] * v[1], a[2] * v[0] + a[3] * v[1]};
}

// The Kalman measurement update with R = r I.
inline void kalman_update(std::array<double, 2>& mu, Mat& P, const std::array<double, 2>& y, double r) {
  const Mat S = {P[0] + r, P[1], P[2], P[3] + r};
  const double det = S[0] * S[3] - S[1] * S[2];
  const Mat K = mul(P, Mat{S[3] / det, -S[1] / det, -S[2] / det, S[0] / det});
  const double r0 = y[0] - mu[0], r1 = y[1] - mu[1];
  mu = {mu[0] + K[0] * r0 + K[1] * r1, mu[1] + K[2] * r0 + K[3] * r1};
  P = mul(Mat{1 - K[0], -K[1], -K[2], 1 - K[3]}, P);
}

}  // namespace spiral_detail


inline SpiralSimulator::SpiralSimulator() : SpiralSimulator(Options{}) {}
inline SpiralSimulator::SpiralSimulator(const Options& o) : o_(o) { reset(); }

inline void SpiralSimulator::reset() {
  using namespace spiral_detail;
  rng_.seed(o_.seed);
  std::normal_distribution<double> n(0, 1);
  x_ = {kX0 * n(rng_), kX0 * n(rng_)};
  t_ = 0;
  first_ = true;
  mu_ = {0, 0};
  P_ = {kX0 * kX0, 0, 0, kX0 * kX0};
}

inline int SpiralSimulator::nominal_steps() const {
  return std::max(1, (int)std::lround(o_.interval / spiral_detail::kH));
}

inline void SpiralSimulator::euler(int steps) {
  using namespace spiral_detail;
  std::normal_distribution<double> n(0, 1);
  const double s = o_.sigma_p * std::sqrt(kH);
  for (int i = 0; i < steps; ++i) {
    double a = x_[0] + kH * (kA[0][0] * x_[0] + kA[0][1] * x_[1]) + s * n(rng_);
    double b = x_[1] + kH * (kA[1][0] * x_[0] + kA[1][1] * x_[1]) + s * n(rng_);
    x_ = {a, b};
  }
}

// F = M^steps and Q = sum_{i<steps} M^i (sigma_p^2 h I) M^i^T: the exact discrete model of `steps`
// Euler-Maruyama steps, so the filter below is the optimal one for this simulation.
inline SpiralSimulator::Mat SpiralSimulator::transition(int steps, Mat* Q) const {
  using namespace spiral_detail;
  const Mat M = {1 + kH * kA[0][0], kH * kA[0][1], kH * kA[1][0], 1 + kH * kA[1][1]};
  const double q = o_.sigma_p * o_.sigma_p * kH;
  Mat F = {1, 0, 0, 1}, Qs = {0, 0, 0, 0};
  for (int i = 0; i < steps; ++i) {
    F = mul(M, F);
    Qs = add(mul(mul(M, Qs), tr(M)), Mat{q, 0, 0, q});
  }
  *Q = Qs;
  return F;
}

inline SpiralSimulator::Measurement SpiralSimulator::next() {
  using namespace spiral_detail;
  const int nominal = nominal_steps();
  if (!first_) {
    int steps = nominal;
    if (o_.irregular)  // the training distribution: gaps of 2..20 Euler steps when nominal is 10
      steps = std::uniform_int_distribution<int>(std::max(1, nominal / 5), 2 * nominal)(rng_);
    euler(steps);
    t_ += (double)steps / nominal;
    Mat Q;
    const Mat F = transition(steps, &Q);
    mu_ = mat_vec(F, mu_);
    P_ = add(mul(mul(F, P_), tr(F)), Q);
  }
  first_ = false;
  std::normal_distribution<double> n(0, 1);
  Measurement m;
  m.y = {x_[0] + o_.sigma_m * n(rng_), x_[1] + o_.sigma_m * n(rng_)};
  m.t = t_;
  m.truth = x_;
  kalman_update(mu_, P_, m.y, o_.sigma_m * o_.sigma_m);
  Mat Q;
  m.kalman_next = mat_vec(transition(nominal, &Q), mu_);
  return m;
}

inline std::vector<SpiralSimulator::Measurement> SpiralSimulator::trajectory(int n) {
  using namespace spiral_detail;
  std::mt19937_64 rng(o_.seed);
  std::normal_distribution<double> nrm(0, 1);
  const int nominal = nominal_steps();
  std::vector<int> gaps((size_t)std::max(n, 0), nominal);
  if (o_.irregular)
    for (auto& g : gaps) g = std::uniform_int_distribution<int>(std::max(1, nominal / 5), 2 * nominal)(rng);
  if (!gaps.empty()) gaps[0] = 0;
  std::vector<int> at((size_t)std::max(n, 0));
  int total = 0;
  for (int k = 0; k < n; ++k) at[(size_t)k] = total += gaps[(size_t)k];
  // The Euler path far enough to reach one nominal interval past the last measurement.
  std::vector<std::array<double, 2>> path((size_t)total + nominal + 1);
  path[0] = {kX0 * nrm(rng), kX0 * nrm(rng)};
  const double s = o_.sigma_p * std::sqrt(kH);
  for (size_t i = 1; i < path.size(); ++i) {
    const auto& x = path[i - 1];
    path[i] = {x[0] + kH * (kA[0][0] * x[0] + kA[0][1] * x[1]) + s * nrm(rng),
               x[1] + kH * (kA[1][0] * x[0] + kA[1][1] * x[1]) + s * nrm(rng)};
  }
  std::vector<Measurement> out((size_t)std::max(n, 0));
  for (int k = 0; k < n; ++k) {
    Measurement& m = out[(size_t)k];
    m.truth = path[(size_t)at[(size_t)k]];
    m.truth_ahead = path[(size_t)at[(size_t)k] + nominal];
    m.t = (double)at[(size_t)k] / nominal;
    m.y = {m.truth[0] + o_.sigma_m * nrm(rng), m.truth[1] + o_.sigma_m * nrm(rng)};
  }
  // The exact Kalman filter over the same gaps.
  std::array<double, 2> mu{0, 0};
  Mat P = {kX0 * kX0, 0, 0, kX0 * kX0}, Q;
  const Mat F_nominal = transition(nominal, &Q);
  for (int k = 0; k < n; ++k) {
    Measurement& m = out[(size_t)k];
    if (k > 0) {
      const Mat F = transition(gaps[(size_t)k], &Q);
      mu = mat_vec(F, mu);
      P = add(mul(mul(F, P), tr(F)), Q);
    }
    kalman_update(mu, P, m.y, o_.sigma_m * o_.sigma_m);
    m.kalman_next = mat_vec(F_nominal, mu);
  }
  return out;
}

}  // namespace rfa
