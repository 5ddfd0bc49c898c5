#include "sources.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rfa/npy.hpp"

namespace viewer {

rfa::SpiralSimulator::Options SpiralSource::options() const {
  rfa::SpiralSimulator::Options o;
  o.sigma_m = sigma_m;
  o.sigma_p = sigma_p;
  o.interval = interval;
  o.irregular = irregular;
  o.seed = seed;
  return o;
}

void SpiralSource::reset() {
  sim_.set_options(options());
  sim_.reset();
}

std::string SpiralSource::describe() const {
  char b[160];
  std::snprintf(b, sizeof b, "spiral: sigma_m %.2f, interval %.3f%s", sigma_m, interval, irregular ? ", irregular" : "");
  return b;
}

bool SpiralSource::next(Sample& s) {
  sim_.set_options(options());  // slider changes apply from this sample on
  const rfa::SpiralSimulator::Measurement m = sim_.next();
  s.values.assign((size_t)std::max(dims, 1), 0.0f);
  for (int c = 0; c < std::min(dims, 2); ++c) s.values[(size_t)c] = (float)m.y[(size_t)c];
  s.t = m.t;
  s.has_truth = true;
  s.truth = m.truth;
  s.kalman_next = m.kalman_next;
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
