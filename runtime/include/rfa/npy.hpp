// NumPy .npy files: reading (format versions 1.0, 2.0 and 3.0; little-endian <f4 <f8 <i4 <i8;
// C order) and atomic writing of float32 and int64 arrays. rfa-run's --signal / --tokens /
// --timestamps inputs and --dump outputs use them; so can any app.
#pragma once

#include "rfa/export.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

struct RFA_API NpyArray {
  std::vector<int64_t> shape;  // empty: a scalar (one element)
  bool is_integer = false;     // <i4 / <i8: `ints` holds the data; otherwise `values`
  std::vector<double> values;
  std::vector<int64_t> ints;
  std::string descr;  // as stored, e.g. "<f4"
  int64_t numel() const;
};

// Reads and validates a .npy file. Errors: io_error when it cannot be read, input_error when the
// content is malformed or unsupported (fortran_order, big-endian, other dtypes), naming the file.
RFA_API Result<NpyArray> read_npy(const std::string& path);
// Parses a whole .npy image held in memory; `label` names it in messages.
RFA_API Result<NpyArray> parse_npy(const uint8_t* data, size_t size, const std::string& label);

// Writes a version 1.0 .npy file through a temporary file and a rename (never half-written).
RFA_API Status write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& data);
RFA_API Status write_npy_i64(const std::string& path, const std::vector<int64_t>& shape, const std::vector<int64_t>& data);

}  // namespace rfa
