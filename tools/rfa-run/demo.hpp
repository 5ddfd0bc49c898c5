// rfa-run's built-in jobs: the device self-check and the bundled spiral-filter streaming demo.
#pragma once

#include <memory>

#include "rfa/context.hpp"
#include "rfa/session.hpp"

namespace rfa {

// Runs a Linear on the device and compares it with a double-precision CPU loop.
int run_self_check(Context& ctx, bool json);

// Streams freshly simulated noisy damped-spiral trajectories through a signal model one
// measurement at a time; prints the device, the per-head regimes and the next-step prediction
// error next to the raw measurements' and an exact Kalman filter's. ctx is null with cpu.
int run_spiral_demo(Context* ctx, std::shared_ptr<const Model> model, bool json, bool cpu);

}  // namespace rfa
