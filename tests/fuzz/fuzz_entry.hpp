// The one entry point shared by the libFuzzer target (fuzz_parsers.cpp) and the corpus replay test
// (tests/test_fuzz_corpus.cpp): every hostile-input parser, fed the same bytes.
//  - one file: safetensors (from memory, every tensor converted), config.json, .npy, the GPT-2
//    pre-tokenizer;
//  - several files, the input's sections between kSeparator: the GPT-2 BPE tokenizer's files
//    (encoder.json, vocab.bpe), and the C API's model load from memory (rfa_model_load_memory:
//    config.json, model.safetensors, encoder.json, vocab.bpe), then the loaded model's tokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/config.hpp"
#include "model/npy.hpp"
#include "model/safetensors.hpp"
#include "model/tokenizer.hpp"
#include "rfa/rfa.h"

namespace rfa::fuzz {

// Between the files of a multi-file input (a seed of the corpus is such an input; mutations keep
// most of its separators, and a single file never holds one).
constexpr std::string_view kSeparator{"\0--rfa-file--\0", 14};

struct Outcome {
  bool safetensors_ok = false, config_ok = false, npy_ok = false;
  bool files = false;  // the input had several files
  bool tokenizer_ok = false, model_ok = false;
};

inline std::vector<std::string_view> sections(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t next = text.find(kSeparator, at);
    out.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + kSeparator.size();
  }
}

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

  const std::vector<std::string_view> files = sections(text);
  o.files = files.size() > 1;
  if (!o.files) return o;
  auto tok = make_gpt2_tokenizer(files[0], files[1], "<fuzz>");
  o.tokenizer_ok = tok.ok();
  if (tok.ok()) {
    // Any bytes encode, and every id decodes.
    const std::vector<int> ids = (*tok)->encode(text.substr(0, 512));
    for (int id : ids)
      if (id < 0 || id >= (*tok)->vocab_size()) __builtin_trap();
    (void)(*tok)->decode(ids);
  }
  rfa_model_files f{};
  f.name = "fuzz";
  f.config_json = files[0].data();
  f.config_json_length = files[0].size();
  f.safetensors = files[1].data();
  f.safetensors_length = files[1].size();
  if (files.size() > 3) {
    f.encoder_json = files[2].data();
    f.encoder_json_length = files[2].size();
    f.vocab_bpe = files[3].data();
    f.vocab_bpe_length = files[3].size();
  }
  rfa_model* model = nullptr;
  o.model_ok = rfa_model_load_memory(&f, &model) == RFA_OK;
  if (model) {
    int vocab = 0;
    if (rfa_model_info(model, nullptr, nullptr, nullptr, nullptr, nullptr, &vocab) != RFA_OK) __builtin_trap();
    if (vocab > 0) {  // a language model: its tokenizer, from the files it came with
      size_t count = 0;
      const char* sample = "The filter";
      if (rfa_model_encode(model, sample, 10, nullptr, 0, &count) == RFA_OK && count > 10) __builtin_trap();
    }
    rfa_model_destroy(model);
  }
  return o;
}

}  // namespace rfa::fuzz
