// The model file's tensors as the loader and each attention mechanism's parameter load
// (mechanisms/*/) read them.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/safetensors.hpp"

namespace rfa {

// "[2,3]": a shape as the loader's messages write it.
std::string shape_str(const std::vector<int64_t>& s);

// What non-finite values a tensor may hold. Every tensor the loader reads is checked, used or not
// (docs/model-format.md §4: NaN or infinite weights are rejected); only the derived buffers, which are never read, are not.
enum class Finite { all, allow_inf };

// Reads tensors from the file, checking shapes, dtypes and values, and remembers which names were
// expected so the rest can be reported as unexpected.
class TensorReader {
 public:
  explicit TensorReader(const SafetensorsFile& st) : st_(st) {}

  void ignore(const std::string& name) { expected_.insert(name); }
  bool has(const std::string& name) const { return st_.contains(name); }

  // A required float tensor of exactly `shape`.
  Result<HostTensor> f32(const std::string& name, const std::vector<int64_t>& shape, bool check = true) {
    RFA_TRY(check_entry(name, shape, true));
    auto t = st_.read_f32(name);
    if (!t) return t.status();
    if (check) {
      for (size_t i = 0; i < t->data.size(); ++i)
        if (!std::isfinite(t->data[i])) return non_finite(name, t->shape, i, t->data[i]);
    }
    return t;
  }

  Result<std::vector<double>> f64(const std::string& name, const std::vector<int64_t>& shape,
                                  Finite finite = Finite::all) {
    RFA_TRY(check_entry(name, shape, true));
    auto v = st_.read_f64(name);
    if (!v) return v.status();
    for (size_t i = 0; i < v->size(); ++i) {
      double x = (*v)[i];
      if (std::isfinite(x)) continue;
      if (finite == Finite::allow_inf && std::isinf(x)) continue;
      return non_finite(name, shape, i, x);
    }
    return v;
  }

  // A tensor that may be present but is unused: its shape and its values are checked (a NaN in a
  // module the flags switch off is still a broken file), nothing is kept.
  Status optional_unused(const std::string& name, const std::vector<int64_t>& shape) {
    if (!has(name)) {
      expected_.insert(name);
      return Status::Ok();
    }
    RFA_TRY(check_entry(name, shape, false));
    const TensorEntry* e = st_.find(name);
    if (e->dtype == DType::i64 || e->dtype == DType::i32) return Status::Ok();
    auto v = st_.read_f64(name);
    if (!v) return v.status();
    for (size_t i = 0; i < v->size(); ++i)
      if (!std::isfinite((*v)[i])) return non_finite(name, shape, i, (*v)[i]);
    return Status::Ok();
  }

  Status unexpected() const {
    std::vector<std::string> extra;
    for (const TensorEntry& e : st_.tensors())
      if (!expected_.count(e.name)) extra.push_back(e.name);
    if (extra.empty()) return Status::Ok();
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 5; ++i) list += (i ? ", '" : "'") + extra[i] + "'";
    if (extra.size() > 5) list += ", ... (" + std::to_string(extra.size()) + " in all)";
    return make_error(Code::model_error, st_.label() + ": unexpected tensor" + (extra.size() > 1 ? "s " : " ") +
                                             list + " (not used by this config; wrong architecture or flags?)");
  }

 private:
  Status check_entry(const std::string& name, const std::vector<int64_t>& shape, bool used) {
    expected_.insert(name);
    const TensorEntry* e = st_.find(name);
    if (!e)
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "' missing (expected shape " +
                                               shape_str(shape) + ")");
    if (e->shape != shape)
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': shape " + shape_str(shape) +
                                               " expected, " + shape_str(e->shape) + " found");
    if (used && (e->dtype == DType::i64 || e->dtype == DType::i32))
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': dtype " + dtype_name(e->dtype) +
                                               " found, a float dtype (F32, F16, BF16, F64) expected");
    return Status::Ok();
  }

  Status non_finite(const std::string& name, const std::vector<int64_t>& shape, size_t i, double x) const;

  const SafetensorsFile& st_;
  std::set<std::string> expected_;
};


// Assigns a Result's value to `dst`, or returns its status from the enclosing function.
#define RFA_ASSIGN(dst, expr)            \
  do {                                   \
    auto rfa_r_ = (expr);                \
    if (!rfa_r_) return rfa_r_.status(); \
    dst = rfa_r_.take();                 \
  } while (0)

}  // namespace rfa
