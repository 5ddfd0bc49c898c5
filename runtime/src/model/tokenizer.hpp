// Tokenizers: the public interface is rfa/tokenizer.hpp; this adds what only the runtime and its
// tests use.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"
#include "rfa/status.hpp"
#include "rfa/tokenizer.hpp"

namespace rfa {

// The GPT-2 pre-tokenizer: splits text into the pieces its regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matches, as byte ranges of `text`. Exposed for tests.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace rfa
