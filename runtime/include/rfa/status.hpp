// Status and Result: how every public RFA-VK call reports failure.
// No exception crosses the public API; each failure carries a code and a message that names
// the file, tensor, field or limit at fault.
#pragma once

#include "rfa/export.h"

#include <optional>
#include <string>
#include <utility>

namespace rfa {

// Codes are stable: the C API and rfa-run's exit codes map from them.
enum class Code : int {
  ok = 0,
  invalid_argument = 1,  // a caller's mistake: bad shape, bad option (rfa-run exit 2 or 4)
  model_error = 2,       // model file or config is malformed or unsupported (rfa-run exit 3)
  input_error = 3,       // input data: tokens out of range, non-monotonic timestamps, too long (exit 4)
  device_error = 4,      // no suitable Vulkan device, a Vulkan call failed (exit 5)
  out_of_memory = 5,     // device memory or the configured budget is exhausted (exit 5)
  device_lost = 6,       // VK_ERROR_DEVICE_LOST: the context refuses further work (exit 5)
  io_error = 7,          // a file could not be read or written
  unsupported = 8,       // a valid request this build or device cannot serve
};

RFA_API const char* code_name(Code c);

class RFA_API Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::ok; }
  explicit operator bool() const { return ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "model_error: model.safetensors: tensor 'W_q.weight': shape [512,256] expected, [512,255] found"
  std::string to_string() const;

 private:
  Code code_ = Code::ok;
  std::string message_;
};

inline Status make_error(Code c, std::string msg) { return Status(c, std::move(msg)); }

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}                  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {}          // NOLINT
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T take() { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace rfa

// Propagate a failed Status from an expression that returns Status.
#define RFA_TRY(expr)                          \
  do {                                         \
    ::rfa::Status rfa_try_s_ = (expr);         \
    if (!rfa_try_s_.ok()) return rfa_try_s_;   \
  } while (0)
