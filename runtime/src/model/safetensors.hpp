// safetensors: reading (the file is treated as hostile) and writing (atomically).
// Format: u64 little-endian header length N, N bytes of JSON header
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}},
// then the data area; offsets are relative to the start of the data area.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"
#include "rfa/safetensors.hpp"
#include "rfa/status.hpp"

namespace rfa {

struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets inside the data area
  int64_t numel() const;
};

// Limits on what a header may claim (far beyond any real RFA model, far below anything harmful).
struct SafetensorsLimits {
  uint64_t max_header_bytes = 100ull << 20;  // 100 MB of JSON
  int max_rank = 8;
  size_t max_tensors = 1u << 20;
};

// A parsed, validated safetensors file. Tensors are read on demand: from the memory buffer it was
// parsed from, or from the file by seeking (so a checkpoint carrying the reference's 192 MiB-per-layer
// derived buffers is never read in full).
class SafetensorsFile {
 public:
  // Opens `path`, reads and validates the header only.
  static Result<SafetensorsFile> open(const std::string& path, const SafetensorsLimits& limits = {});
  // Parses a whole file image held in memory (used by the fuzzer and tests). `label` names it in
  // messages.
  static Result<SafetensorsFile> from_memory(std::vector<uint8_t> bytes, const std::string& label,
                                             const SafetensorsLimits& limits = {});

  const std::string& label() const { return label_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }  // in header order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorEntry* find(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }

  // The tensor converted to f32 (F16/BF16 widened, F64 rounded, integers converted).
  Result<HostTensor> read_f32(const std::string& name) const;
  // The tensor converted to f64 (exact for every stored float type; used for the SDE parameters).
  Result<std::vector<double>> read_f64(const std::string& name) const;

 private:
  Status read_raw(const TensorEntry& e, std::vector<uint8_t>& out) const;

  std::string label_;
  std::string path_;           // empty when parsed from memory
  std::vector<uint8_t> mem_;   // the whole file when parsed from memory
  uint64_t data_start_ = 0;    // 8 + header length
  std::vector<TensorEntry> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Validates a header (the JSON text) against a data area of `data_bytes` bytes. Exposed so the
// fuzzer and the tests can hit it directly.
Status parse_safetensors_header(std::string_view header_json, uint64_t data_bytes,
                                const std::string& label, const SafetensorsLimits& limits,
                                std::vector<TensorEntry>& tensors,
                                std::map<std::string, std::string>& metadata);

// Fuzzing entry point: parses `size` bytes as a safetensors file and converts every tensor.
// Never crashes, never throws; returns the first error.
Status check_safetensors_memory(const uint8_t* data, size_t size);

// Writing (DType, TensorToWrite, write_safetensors, encode_safetensors) is public: rfa/safetensors.hpp.

// IEEE half / bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

}  // namespace rfa
