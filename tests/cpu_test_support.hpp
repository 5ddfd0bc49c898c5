// Shared by the CPU suites (the double-precision twin's tests, test_reference_*.cpp): random complex
// inputs, irregular timestamps and comparisons of double results, written once. Header-only and
// GPU-free (the GPU suites' helpers are test_support.hpp).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rfa::test {

// Complex normal entries, real and imaginary parts N(0, scale^2), from mt19937(seed).
inline std::vector<std::complex<double>> random_complex(size_t n, uint32_t seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, scale);
  std::vector<std::complex<double>> z(n);
  for (auto& x : z) x = std::complex<double>(g(rng), g(rng));
  return z;
}

// How irregular_times steps from one timestamp to the next.
struct TimeSteps {
  double lo = 0.1, hi = 2.0;  // real steps uniform in [lo, hi)
  int grid = 0;               // > 0: integer steps k in [1, 2 grid] over grid instead (k / grid): every
                              // timestamp, sum and difference exact in double for grid = 2^n
  bool dyadic = false;        // real steps rounded to multiples of 1/64, so that t + 1e6 is exact
  bool repeats = false;       // the step after position i with i % 7 == 3 is 0 (repeated timestamps)
};

// Non-decreasing timestamps [B][N] from mt19937(seed): each row starts at `offset`, then one step
// per position.
inline std::vector<double> irregular_times(int B, int N, uint32_t seed, double offset = 0.0,
                                           const TimeSteps& steps = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(steps.lo, steps.hi);
  std::uniform_int_distribution<int> k(1, 2 * std::max(steps.grid, 1));
  std::vector<double> t((size_t)B * N);
  for (int b = 0; b < B; ++b) {
    double x = 0.0;
    for (int i = 0; i < N; ++i) {
      t[(size_t)b * N + i] = offset + x;
      double step = steps.grid > 0 ? k(rng) / (double)steps.grid : u(rng);
      if (steps.dyadic) step = std::round(step * 64.0) / 64.0;
      if (steps.repeats && i % 7 == 3) step = 0.0;
      x += step;
    }
  }
  return t;
}

// max_k |a_k - b_k|; equal entries (infinities too) count 0.
template <typename T>
double max_abs_diff(const std::vector<T>& a, const std::vector<T>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) continue;
    m = std::max(m, (double)std::abs(a[k] - b[k]));
  }
  return m;
}

// max_k |a_k - b_k| / max(1, |b_k|): absolute below 1, relative above; equal entries count 0.
template <typename T>
double max_rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) continue;
    m = std::fmax(m, (double)std::abs(a[k] - b[k]) / std::fmax(1.0, (double)std::abs(b[k])));
  }
  return m;
}

inline bool is_finite(double x) { return std::isfinite(x); }
inline bool is_finite(const std::complex<double>& z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }
template <typename T>
bool all_finite(const std::vector<T>& v) {
  for (const T& x : v)
    if (!is_finite(x)) return false;
  return true;
}

}  // namespace rfa::test
