// rfa::Sampler is implemented in the library (runtime/src/sample/sampler.cpp); nothing is left here.
#include "sampler.hpp"
