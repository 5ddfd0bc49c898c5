// Tokenizers for the lm architecture: byte-level (id = byte) and GPT-2 byte-level BPE
// (encoder.json + vocab.bpe in the model folder).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"
#include "rfa/status.hpp"

namespace rfa {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int> encode(std::string_view text) = 0;
  // Ids outside the vocabulary are skipped.
  virtual std::string decode(const std::vector<int>& ids) = 0;
  virtual int vocab_size() = 0;
};

// ids = bytes 0..255.
std::unique_ptr<Tokenizer> make_byte_tokenizer();

// GPT-2 BPE from the two files' contents (tests build tiny ones). `label` names them in messages.
Result<std::unique_ptr<Tokenizer>> make_gpt2_tokenizer(std::string_view encoder_json, std::string_view vocab_bpe,
                                                       const std::string& label = "gpt2 tokenizer");

// The GPT-2 pre-tokenizer: splits text into the pieces its regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matches, as byte ranges of `text`. Exposed for tests.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

// The tokenizer a loaded lm names (model.tokenizer): "bytes", or "gpt2" reading encoder.json and
// vocab.bpe from model.source_dir. Every id it can produce must be < model.vocab.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const Model& model);

}  // namespace rfa
