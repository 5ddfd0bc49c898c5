// Reading the fields of a config.json object with errors that name the file and the key
// ("<label>: args.<key>: ..."): model/config.cpp's parser, and the mechanisms' own keys
// (ModelConfig::args_json; Mechanism::check_config and load_params read them with it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "rfa/status.hpp"

namespace rfa::config_detail {

using json = nlohmann::json;

inline std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Reads fields of one JSON object, reporting the first problem as "<label>: <prefix><key>: ...".
class Fields {
 public:
  Fields(const json& obj, std::string label, std::string prefix)
      : obj_(obj), label_(std::move(label)), prefix_(std::move(prefix)) {}

  const Status& status() const { return status_; }

  // The value at `key`, or nullptr when absent (or null and null_is_absent).
  const json* get(const char* key, bool null_is_absent) {
    auto it = obj_.find(key);
    if (it == obj_.end()) return nullptr;
    if (it->is_null()) {
      if (null_is_absent) return nullptr;
      fail(key, "expected a value, found null");
      return nullptr;
    }
    return &*it;
  }

  void fail(const char* key, const std::string& what) {
    if (status_.ok()) status_ = make_error(Code::model_error, label_ + ": " + prefix_ + key + ": " + what);
  }

  void boolean(const char* key, bool& out, bool null_is_absent = false) {
    const json* v = get(key, null_is_absent);
    if (!v) return;
    if (v->is_boolean()) out = v->get<bool>();
    else if (v->is_number_integer() && (v->get<int64_t>() == 0 || v->get<int64_t>() == 1))
      out = v->get<int64_t>() == 1;
    else fail(key, "expected a boolean (true/false or 0/1), found " + brief(*v));
  }

  void integer(const char* key, int& out, int64_t lo, int64_t hi, bool null_is_absent = false) {
    const json* v = get(key, null_is_absent);
    if (!v) return;
    if (!v->is_number_integer()) {
      fail(key, "expected an integer, found " + brief(*v));
      return;
    }
    if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)std::numeric_limits<int64_t>::max()) {
      fail(key, "value " + brief(*v) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return;
    }
    int64_t x = v->get<int64_t>();
    if (x < lo || x > hi) {
      fail(key, "value " + std::to_string(x) + " out of range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
      return;
    }
    out = (int)x;
  }

  void choice(const char* key, int& out, std::initializer_list<int> allowed) {
    const json* v = get(key, false);
    if (!v) return;
    std::string list;
    for (int a : allowed) list += (list.empty() ? "" : ", ") + std::to_string(a);
    if (!v->is_number_integer()) {
      fail(key, "expected one of " + list + ", found " + brief(*v));
      return;
    }
    int64_t x = v->is_number_unsigned() ? (int64_t)std::min<uint64_t>(v->get<uint64_t>(), 1u << 30)
                                        : v->get<int64_t>();
    for (int a : allowed)
      if (x == a) {
        out = a;
        return;
      }
    fail(key, "expected one of " + list + ", found " + brief(*v));
  }

  void number(const char* key, double& out, bool null_is_absent = false) {
    const json* v = get(key, null_is_absent);
    if (!v) return;
    if (!v->is_number()) {
      fail(key, "expected a number, found " + brief(*v));
      return;
    }
    double x = v->get<double>();
    if (!std::isfinite(x)) {
      fail(key, "expected a finite number, found " + brief(*v));
      return;
    }
    out = x;
  }

  void optional_number(const char* key, std::optional<double>& out) {
    const json* v = get(key, true);
    if (!v) return;
    double x = 0;
    number(key, x);
    if (status_.ok()) out = x;
  }

  bool string(const char* key, std::string& out, bool null_is_absent = false) {
    const json* v = get(key, null_is_absent);
    if (!v) return false;
    if (!v->is_string()) {
      fail(key, "expected a string, found " + brief(*v));
      return false;
    }
    out = v->get<std::string>();
    return true;
  }

 private:
  const json& obj_;
  std::string label_, prefix_;
  Status status_;
};

}  // namespace rfa::config_detail
