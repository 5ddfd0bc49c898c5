// What the viewer streams into a signal model: the damped spiral of the AFA thesis (simulated live,
// with a Kalman filter beside it) or the rows of a .npy file. LM input (prompt, generation) lives
// in app.cpp: it is just tokens.
#pragma once

#include <array>
#include <random>
#include <string>
#include <vector>

#include "rfa/spiral.hpp"

namespace viewer {

// One measurement: values [input_dim], its timestamp (in units of the nominal sample interval),
// and, for the spiral, the true state and the Kalman filter's next-step prediction.
struct Sample {
  std::vector<float> values;
  double t = 0;
  bool has_truth = false;
  std::array<double, 2> truth{}, kalman_next{};
};

class Source {
 public:
  virtual ~Source() = default;
  virtual bool next(Sample& s) = 0;  // false at the end of the data
  virtual void reset() = 0;
  virtual std::string describe() const = 0;
};

// The live damped spiral (rfa::SpiralSimulator: the bundled model's training data, with its exact
// Kalman filter). The public fields are the UI's sliders; they apply to the following samples.
class SpiralSource : public Source {
 public:
  double sigma_m = 1.0, sigma_p = 0.1, interval = 0.1;
  bool irregular = false;
  uint64_t seed = 2026;
  int dims = 2;  // the model's input_dim (values beyond 2 stay 0)

  SpiralSource() { reset(); }
  bool next(Sample& s) override;
  void reset() override;
  std::string describe() const override;

 private:
  rfa::SpiralSimulator::Options options() const;
  rfa::SpiralSimulator sim_;
};

class NpySource : public Source {
 public:
  // values [N, dims] (or [N] when dims == 1); t = row index, or column `time_column` when >= 0.
  bool open(const std::string& path, int dims, std::string* error);
  bool next(Sample& s) override;
  void reset() override { row_ = 0; }
  std::string describe() const override { return path_; }
  int rows() const { return rows_; }

 private:
  std::string path_;
  std::vector<double> data_;
  int rows_ = 0, cols_ = 0, dims_ = 0, row_ = 0;
};

}  // namespace viewer
