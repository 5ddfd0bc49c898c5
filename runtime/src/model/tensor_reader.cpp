#include "model/tensor_reader.hpp"

namespace rfa {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';  // appended apart: g++ 12's -Wrestrict misfires on ("," + std::string)
    out += std::to_string(s[i]);
  }
  return out + "]";
}

namespace {

std::string index_str(const std::vector<int64_t>& shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) break;
    idx[d] = (int64_t)(flat % (size_t)shape[d]);
    flat /= (size_t)shape[d];
  }
  return shape_str(idx);
}

}  // namespace

Status TensorReader::non_finite(const std::string& name, const std::vector<int64_t>& shape, size_t i, double x) const {
  return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': element " + std::to_string(i) +
                                           " (index " + index_str(shape, i) + ") is " +
                                           (std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf"));
}

}  // namespace rfa
