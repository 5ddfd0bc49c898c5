// Tokenizers of language models: byte-level (id = byte value) and GPT-2 byte-level BPE
// (encoder.json + vocab.bpe in the model folder). What `rfa-run --prompt` and the viewer use.
#pragma once

#include "rfa/export.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

struct Model;

class RFA_API Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text (UTF-8 or any bytes) -> token ids.
  virtual std::vector<int> encode(std::string_view text) = 0;
  // Token ids -> the bytes they stand for (a single id gives its byte or BPE piece, which may be an
  // incomplete UTF-8 sequence). Ids outside the vocabulary are skipped.
  virtual std::string decode(const std::vector<int>& ids) = 0;
  virtual int vocab_size() = 0;
};

// ids = bytes 0..255.
RFA_API std::unique_ptr<Tokenizer> make_byte_tokenizer();

// GPT-2 BPE from the contents of encoder.json and vocab.bpe; `label` names them in messages.
RFA_API Result<std::unique_ptr<Tokenizer>> make_gpt2_tokenizer(std::string_view encoder_json, std::string_view vocab_bpe,
                                                       const std::string& label = "gpt2 tokenizer");

// The tokenizer a loaded language model names (ModelInfo::tokenizer): "bytes", or "gpt2" reading
// encoder.json and vocab.bpe from the model's folder. Every id it can produce is < the model's
// vocabulary. A model_error names the missing or malformed file; not a language model: invalid_argument.
RFA_API Result<std::unique_ptr<Tokenizer>> load_tokenizer(const Model& model);

}  // namespace rfa
