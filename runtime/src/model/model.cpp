#include "model/model.hpp"

namespace rfa {

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::lm: return "lm";
    case Architecture::signal: return "signal";
    case Architecture::attention: return "attention";
  }
  return "unknown";
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace rfa
