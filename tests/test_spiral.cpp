// The spiral source shared by rfa-run's demo and the viewer: timestamps, determinism, and a Kalman
// filter that really is near-optimal (far below the raw measurement error, close to its own
// predicted error variance).
#include <doctest/doctest.h>

#include <cmath>

#include "rfa/spiral.hpp"

using rfa::SpiralSimulator;

TEST_CASE("regular and irregular timestamps, reproducible by seed") {
  SpiralSimulator::Options o;
  SpiralSimulator a(o), b(o);
  for (int k = 0; k < 50; ++k) {
    auto ma = a.next(), mb = b.next();
    CHECK(ma.t == doctest::Approx(k));
    CHECK(ma.y == mb.y);
  }
  o.irregular = true;
  SpiralSimulator c(o);
  double prev = c.next().t;
  for (int k = 0; k < 200; ++k) {
    double t = c.next().t;
    CHECK(t - prev >= 0.2 - 1e-12);  // gaps of 2..20 Euler steps of a 10-step interval
    CHECK(t - prev <= 2.0 + 1e-12);
    prev = t;
  }
  c.reset();
  CHECK(c.next().t == 0.0);
}

TEST_CASE("the Kalman filter beats the raw measurements by far") {
  double raw = 0, kf = 0;
  int n = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SpiralSimulator::Options o;
    o.seed = seed;
    SpiralSimulator s(o);
    auto prev = s.next();
    for (int k = 0; k < 100; ++k) {
      auto m = s.next();
      for (int c = 0; c < 2; ++c) {
        raw += std::pow(prev.y[c] - m.truth[c], 2);
        kf += std::pow(prev.kalman_next[c] - m.truth[c], 2);
      }
      n += 2;
      prev = m;
    }
  }
  raw /= n;
  kf /= n;
  CHECK(raw > 1.5);  // sigma_m^2 = 1 plus the state's motion over one interval
  CHECK(kf < 0.1);   // models/spiral-filter/MODEL.md: 0.072 on held-out trajectories
  CHECK(kf > 0.02);
}

TEST_CASE("whole trajectories carry the state one interval ahead, regular and irregular") {
  SpiralSimulator::Options o;
  auto reg = SpiralSimulator(o).trajectory(60);
  REQUIRE(reg.size() == 60);
  for (int k = 0; k + 1 < 60; ++k) {
    CHECK(reg[(size_t)k].t == doctest::Approx(k));
    // regular sampling: one interval ahead is exactly the next measurement's state
    CHECK(reg[(size_t)k].truth_ahead[0] == reg[(size_t)k + 1].truth[0]);
    CHECK(reg[(size_t)k].truth_ahead[1] == reg[(size_t)k + 1].truth[1]);
  }
  o.irregular = true;
  auto irr = SpiralSimulator(o).trajectory(300);
  double raw = 0, kf = 0;
  for (size_t k = 1; k < irr.size(); ++k) {
    const double gap = irr[k].t - irr[k - 1].t;
    CHECK(gap >= 0.2 - 1e-12);
    CHECK(gap <= 2.0 + 1e-12);
  }
  for (const auto& m : irr)
    for (int c = 0; c < 2; ++c) {
      raw += std::pow(m.y[c] - m.truth_ahead[c], 2);
      kf += std::pow(m.kalman_next[c] - m.truth_ahead[c], 2);
    }
  CHECK(kf < 0.2 * raw);  // the exact filter over irregular gaps still beats the raw measurement by far
}
