#include "rfa/status.hpp"

#include "rfa/params.hpp"

namespace rfa {

const char* code_name(Code c) {
  switch (c) {
    case Code::ok: return "ok";
    case Code::invalid_argument: return "invalid_argument";
    case Code::model_error: return "model_error";
    case Code::input_error: return "input_error";
    case Code::device_error: return "device_error";
    case Code::out_of_memory: return "out_of_memory";
    case Code::device_lost: return "device_lost";
    case Code::io_error: return "io_error";
    case Code::unsupported: return "unsupported";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message_;
}

const char* regime_name(Regime r) {
  switch (r) {
    case Regime::diffusive: return "diffusive";
    case Regime::integrative: return "integrative";
    case Regime::brownian: return "brownian";
  }
  return "unknown";
}

}  // namespace rfa
