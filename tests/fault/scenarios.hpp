// The fault sweep's scenarios (issue 33): what an app does with the runtime, each as a set-up
// (never faulted) and a faulted part that resumes where a failed attempt left the objects.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "fault/sweep.hpp"

namespace rfa::test::sweep {

// Every scenario of the sweep: context create, model load, session create, prefill (and again with
// pooled descriptors and packed bindings), stream steps past the window, generation (GPU and host
// sampler), probes and diagnostics, a viewer frame (the frame calls rfa-viewer makes, headless),
// and the C API from context to probe.
std::vector<Scenario> scenarios();

// The signal the scenarios stream into models/spiral-filter, position p of every row: two smooth
// channels at timestamps 0.7 p.
inline std::vector<float> spiral_values(int p0, int n, int batch = 1) {
  std::vector<float> v;
  for (int b = 0; b < batch; ++b)
    for (int p = p0; p < p0 + n; ++p) {
      v.push_back((float)std::sin(0.3 * p + b));
      v.push_back((float)std::cos(0.21 * p - b));
    }
  return v;
}
inline std::vector<double> spiral_times(int p0, int n, int batch = 1) {
  std::vector<double> t;
  for (int b = 0; b < batch; ++b)
    for (int p = p0; p < p0 + n; ++p) t.push_back(0.7 * p);
  return t;
}

}  // namespace rfa::test::sweep
