// rfa-run's sampler now lives in the library (rfa/sampler.hpp); this header forwards to it until
// rfa-run includes that directly.
#pragma once

#include "rfa/sampler.hpp"
