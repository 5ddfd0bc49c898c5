// Writing safetensors files: what rfa-make-model and converters use to produce model folders
// (config.json + model.safetensors, see docs/model-format.md). Reading stays inside the loader,
// which treats every file as hostile.
#pragma once

#include "rfa/export.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

enum class DType { f32, f16, bf16, f64, i64, i32 };
RFA_API const char* dtype_name(DType d);  // "F32", "F16", ...
RFA_API size_t dtype_size(DType d);

struct TensorToWrite {
  std::vector<int64_t> shape;
  std::vector<float> data;   // row-major, numel(shape) values
  DType dtype = DType::f32;  // stored as: f32, f16, bf16, f64, i64 or i32 (values converted)
};

// Writes a safetensors file (tensors in name order, data contiguous) via a temporary file and a
// rename: nothing half-written is ever left at `path`.
RFA_API Status write_safetensors(const std::string& path, const std::map<std::string, TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata = {});
// The same bytes, in memory.
RFA_API Result<std::vector<uint8_t>> encode_safetensors(const std::map<std::string, TensorToWrite>& tensors,
                                                const std::map<std::string, std::string>& metadata = {});

}  // namespace rfa
