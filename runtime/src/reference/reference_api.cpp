// The public face of the CPU twin (rfa/reference.hpp): checks the caller's input, then runs
// ref::forward with the requested attention captures. Part of librfa_reference, which may call
// librfa's public API only (architecture names are spelled here, not taken from model.cpp).
#include <cmath>
#include <string>

#include "model/model.hpp"
#include "reference/model_ref.hpp"
#include "rfa/reference.hpp"

namespace rfa {

Result<std::vector<double>> reference_forward(const Model& m, int batch, int n, const double* values,
                                              const int64_t* ids, const double* timestamps,
                                              const std::vector<std::pair<int, int>>& attention,
                                              std::vector<ReferenceAttention>* maps, int window) {
  if (batch < 1 || n < 1)
    return make_error(Code::invalid_argument, "reference_forward: batch and n must be >= 1, got " +
                                                  std::to_string(batch) + " and " + std::to_string(n));
  const bool lm = m.arch == Architecture::lm;
  if (lm && !ids) return make_error(Code::invalid_argument, "reference_forward: a language model takes token ids");
  if (!lm && !values)
    return make_error(Code::invalid_argument, std::string("reference_forward: a ") +
                                                  (m.arch == Architecture::signal ? "signal" : "attention") +
                                                  " model takes values");
  const size_t count = (size_t)batch * n;
  if (lm) {
    for (size_t i = 0; i < count; ++i)
      if (ids[i] < 0 || ids[i] >= m.vocab)
        return make_error(Code::input_error, "reference_forward: token id " + std::to_string(ids[i]) + " at index " +
                                                 std::to_string(i) + " is outside the vocabulary [0, " +
                                                 std::to_string(m.vocab) + ")");
  } else {
    const int d = m.arch == Architecture::signal ? m.d_in : m.d_e;
    for (size_t i = 0; i < count * (size_t)d; ++i)
      if (!std::isfinite(values[i]))
        return make_error(Code::input_error, "reference_forward: value " + std::to_string(i) + " is not finite");
  }
  ref::ModelProbe probe;
  probe.requests = attention;
  auto r = ref::forward(m, batch, n, lm ? nullptr : values, lm ? ids : nullptr, timestamps,
                        attention.empty() ? nullptr : &probe, window);
  if (!r) return r.status();
  if (maps)
    for (auto& c : probe.captures) maps->push_back({c.layer, c.head, std::move(c.Ahat), std::move(c.A)});
  return r;
}

}  // namespace rfa
