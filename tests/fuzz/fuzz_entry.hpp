// The one entry point shared by the libFuzzer target (fuzz_parsers.cpp) and the corpus replay test
// (tests/test_fuzz_corpus.cpp): every hostile-input parser of the model folder, fed the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/config.hpp"
#include "model/npy.hpp"
#include "model/safetensors.hpp"
#include "model/tokenizer.hpp"

namespace rfa::fuzz {

struct Outcome {
  bool safetensors_ok = false, config_ok = false, npy_ok = false;
};

inline Outcome run_parsers(const uint8_t* data, size_t size) {
  Outcome o;
  o.safetensors_ok = check_safetensors_memory(data, size).ok();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  o.config_ok = parse_config(text, "<fuzz>").ok();
  o.npy_ok = parse_npy(data, size, "<fuzz>").ok();
  // The pre-tokenizer must tile any byte string.
  size_t covered = 0;
  for (std::string_view piece : gpt2_pretokenize(text)) covered += piece.size();
  if (covered != size) __builtin_trap();
  return o;
}

}  // namespace rfa::fuzz
