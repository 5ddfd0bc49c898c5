// The damped spiral of the Adaptive Filter Attention thesis as a live measurement source, with the
// exact Kalman filter of its simulation beside it: the data the bundled spiral-filter model was
// trained on (models/train/spiral.py), for demos, the viewer and tests.
//
// dx = A x dt + sigma_p dW, A = [[0.9, -2], [1, -1.1]] (eigenvalues -0.1 +/- i), simulated exactly
// as Euler-Maruyama with h = 0.01; a measurement y = x + sigma_m e every `interval` time units
// (10 Euler steps by default), or after irregular gaps of U{interval/5 .. 2 interval} steps.
// Timestamps are in units of the nominal interval, as the model was trained.
#pragma once

#include "rfa/export.h"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace rfa {

class RFA_API SpiralSimulator {
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

}  // namespace rfa
