// What the C API's translation units share: the handles behind the opaque C types, the per-thread
// error message, and the guard that turns a Status or an escaping exception into an rfa_status.
#pragma once

#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "rfa/context.hpp"
#include "rfa/rfa.h"
#include "rfa/session.hpp"
#include "rfa/tokenizer.hpp"

struct rfa_context {
  std::unique_ptr<rfa::Context> ctx;
  rfa::DeviceInfo info;  // filled on the first rfa_context_device call
  bool info_known = false;
};

struct rfa_model {
  std::shared_ptr<const rfa::Model> model;
  rfa::ModelInfo info;  // the strings rfa_model_architecture / _name / _tokenizer hand out
  // The tokenizer, loaded on first use (language models only).
  mutable std::mutex tokenizer_mutex;
  mutable std::unique_ptr<rfa::Tokenizer> tokenizer;
};

struct rfa_session {
  std::unique_ptr<rfa::Session> session;
};

namespace rfa::capi {

// The message of the last failed call on this thread.
std::string& last_error();
// Device list of the last rfa_device_count on this thread (rfa_device_name points into it).
std::vector<DeviceInfo>& thread_devices();

inline rfa_status to_c(const Status& s) {
  if (s.ok()) return RFA_OK;
  last_error() = s.to_string();
  return (rfa_status)(int)s.code();
}

inline rfa_status invalid(const std::string& what) {
  last_error() = "invalid_argument: " + what;
  return RFA_ERROR_INVALID_ARGUMENT;
}

template <typename F>
rfa_status guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    last_error() = "out_of_memory: host allocation failed";
    return RFA_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error() = std::string("internal error: ") + e.what();
    return RFA_ERROR_DEVICE;
  }
}

}  // namespace rfa::capi
