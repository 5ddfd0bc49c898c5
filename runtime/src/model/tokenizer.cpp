#include "model/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "model/file_util.hpp"

namespace rfa {

// ---- byte-level --------------------------------------------------------------------------------

namespace {

class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int> encode(std::string_view text) override {
    std::vector<int> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = (unsigned char)text[i];
    return ids;
  }
  std::string decode(const std::vector<int>& ids) override {
    std::string s;
    s.reserve(ids.size());
    for (int id : ids)
      if (id >= 0 && id < 256) s.push_back((char)id);
    return s;
  }
  int vocab_size() override { return 256; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

// ---- GPT-2 pre-tokenizer -----------------------------------------------------------------------

namespace {

// Reads one UTF-8 code point at s[i]; returns -1 for an invalid or truncated sequence (then len = 1).
int32_t next_code_point(std::string_view s, size_t i, size_t& len) {
  const unsigned char c = (unsigned char)s[i];
  len = 1;
  if (c < 0x80) return c;
  int n;
  int32_t cp;
  if (c >= 0xc2 && c <= 0xdf) n = 1, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 2, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 3, cp = c & 0x07;
  else return -1;
  if (i + (size_t)n >= s.size()) return -1;  // truncated sequence
  for (int k = 1; k <= n; ++k) {
    const unsigned char cc = (unsigned char)s[i + (size_t)k];
    if ((cc & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return -1;  // overlong, out of range, surrogate
  len = (size_t)n + 1;
  return cp;
}

enum class Cls : uint8_t { letter, number, space, other };

struct Range {
  int32_t lo, hi;
};

bool in(int32_t cp, std::initializer_list<Range> ranges) {
  for (const Range& r : ranges)
    if (cp >= r.lo && cp <= r.hi) return true;
  return false;
}

// Unicode classes for the GPT-2 regex (\s, \p{L}, \p{N}, everything else). Exact for ASCII and
// Latin-1; beyond that a table of the common blocks: White_Space code points, decimal/other digits,
// punctuation, symbols, combining marks, format and private-use characters. Code points >= 0x80 not in
// the table count as letters (true for the great majority: Latin, Greek, Cyrillic, CJK, kana, Hangul).
// This only affects how text is split before BPE; encode/decode round-trips any bytes regardless.
Cls classify(int32_t cp) {
  if (cp < 0) return Cls::other;  // an invalid UTF-8 byte
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return Cls::letter;
    if (cp >= '0' && cp <= '9') return Cls::number;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d)) return Cls::space;
    return Cls::other;
  }
  if (in(cp, {{0x85, 0x85}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f},
              {0x205f, 0x205f}, {0x3000, 0x3000}}))
    return Cls::space;
  if (in(cp, {{0xb2, 0xb3}, {0xb9, 0xb9}, {0xbc, 0xbe}, {0x660, 0x669}, {0x6f0, 0x6f9}, {0x7c0, 0x7c9},
              {0x966, 0x96f}, {0x9e6, 0x9ef}, {0xe50, 0xe59}, {0x2070, 0x2070}, {0x2074, 0x2079},
              {0x2080, 0x2089}, {0x2150, 0x2182}, {0x2185, 0x2189}, {0x2460, 0x249b}, {0x24ea, 0x24ff},
              {0x2776, 0x2793}, {0x3007, 0x3007}, {0x3021, 0x3029}, {0x3038, 0x303a}, {0xff10, 0xff19},
              {0x1d7ce, 0x1d7ff}}))
    return Cls::number;
  if (in(cp, {{0x80, 0x9f},     {0xa1, 0xa9},     {0xab, 0xb4},     {0xb6, 0xb8},     {0xbb, 0xbb},
              {0xbf, 0xbf},     {0xd7, 0xd7},     {0xf7, 0xf7},     {0x2c2, 0x2c5},   {0x2d2, 0x2df},
              {0x2e5, 0x2eb},   {0x2ed, 0x2ed},   {0x2ef, 0x36f},   {0x37e, 0x37e},   {0x384, 0x385},
              {0x387, 0x387},   {0x483, 0x489},   {0x55a, 0x55f},   {0x589, 0x58a},   {0x591, 0x5c7},
              {0x600, 0x61f},   {0x64b, 0x65f},   {0x66a, 0x66d},   {0x670, 0x670},   {0x6d4, 0x6d4},
              {0x6d6, 0x6ed},   {0x900, 0x903},   {0x93a, 0x93c},   {0x93e, 0x94f},   {0x951, 0x957},
              {0x962, 0x965},   {0x970, 0x970},   {0xe31, 0xe31},   {0xe34, 0xe3a},   {0xe3f, 0xe3f},
              {0xe47, 0xe4f},   {0xe5a, 0xe5b},   {0x200b, 0x200f}, {0x2010, 0x2027}, {0x202a, 0x202e},
              {0x2030, 0x205e}, {0x2060, 0x206f}, {0x207a, 0x207e}, {0x208a, 0x208e}, {0x20a0, 0x20ff},
              {0x2190, 0x245f}, {0x249c, 0x24e9}, {0x2500, 0x2775}, {0x2794, 0x2bff}, {0x2e00, 0x2e7f},
              {0x2ff0, 0x2fff}, {0x3001, 0x3006}, {0x3008, 0x3020}, {0x302a, 0x3030}, {0x3036, 0x3037},
              {0x303d, 0x303f}, {0x3099, 0x309c}, {0x30a0, 0x30a0}, {0x30fb, 0x30fb}, {0x3190, 0x319f},
              {0x31c0, 0x31ef}, {0x3200, 0x33ff}, {0xe000, 0xf8ff}, {0xfd3e, 0xfd3f}, {0xfe00, 0xfe6f},
              {0xfeff, 0xfeff}, {0xff01, 0xff0f}, {0xff1a, 0xff20}, {0xff3b, 0xff40}, {0xff5b, 0xff65},
              {0xffe0, 0xffff}, {0x1d000, 0x1d24f}, {0x1f000, 0x1faff}, {0xe0000, 0x10ffff}}))
    return Cls::other;
  return Cls::letter;
}

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  struct CP {
    size_t off, len;
    Cls cls;
    int32_t cp;
  };
  std::vector<CP> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len;
    int32_t cp = next_code_point(text, i, len);
    cps.push_back({i, len, classify(cp), cp});
    i += len;
  }
  const size_t n = cps.size();
  std::vector<std::string_view> out;
  auto emit = [&](size_t a, size_t b) {  // code points [a, b)
    size_t begin = cps[a].off, end = cps[b - 1].off + cps[b - 1].len;
    out.push_back(text.substr(begin, end - begin));
  };
  auto run = [&](size_t k, Cls c) {
    while (k < n && cps[k].cls == c) ++k;
    return k;
  };
  auto ascii_at = [&](size_t k, char ch) { return k < n && cps[k].cp == ch; };
  size_t k = 0;
  while (k < n) {
    // 's 't 're 've 'm 'll 'd (in the regex's order; lower case only, as in GPT-2)
    if (cps[k].cp == '\'') {
      if (ascii_at(k + 1, 's') || ascii_at(k + 1, 't')) {
        emit(k, k + 2), k += 2;
        continue;
      }
      if ((ascii_at(k + 1, 'r') && ascii_at(k + 2, 'e')) || (ascii_at(k + 1, 'v') && ascii_at(k + 2, 'e'))) {
        emit(k, k + 3), k += 3;
        continue;
      }
      if (ascii_at(k + 1, 'm')) {
        emit(k, k + 2), k += 2;
        continue;
      }
      if (ascii_at(k + 1, 'l') && ascii_at(k + 2, 'l')) {
        emit(k, k + 3), k += 3;
        continue;
      }
      if (ascii_at(k + 1, 'd')) {
        emit(k, k + 2), k += 2;
        continue;
      }
    }
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
    size_t start = k, body = k;
    if (cps[k].cp == ' ' && k + 1 < n && cps[k + 1].cls != Cls::space) body = k + 1;
    if (cps[body].cls != Cls::space) {
      size_t e = run(body, cps[body].cls);
      emit(start, e);
      k = e;
      continue;
    }
    // '\s+(?!\S)' then '\s+': a whitespace run before a non-space gives up its last character,
    // which then starts the next piece (as ' word' when it is a plain space).
    size_t e = run(k, Cls::space);
    if (e < n && e - k >= 2) e -= 1;
    emit(k, e);
    k = e;
  }
  return out;
}

// ---- GPT-2 BPE ---------------------------------------------------------------------------------

namespace {

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n.
std::array<int32_t, 256> byte_to_unicode() {
  std::array<int32_t, 256> t{};
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    t[(size_t)b] = printable ? b : 256 + n++;
  }
  return t;
}

class Gpt2Tokenizer final : public Tokenizer {
 public:
  Status init(std::string_view encoder_json, std::string_view vocab_bpe, const std::string& label) {
    const auto b2u = byte_to_unicode();
    std::unordered_map<int32_t, uint8_t> u2b;
    for (int b = 0; b < 256; ++b) u2b[b2u[(size_t)b]] = (uint8_t)b;
    // A token as stored (byte-to-unicode characters) -> its raw bytes.
    auto to_bytes = [&](std::string_view s, std::string& out) {
      out.clear();
      for (size_t i = 0; i < s.size();) {
        size_t len;
        int32_t cp = next_code_point(s, i, len);
        auto it = u2b.find(cp);
        if (cp < 0 || it == u2b.end()) return false;
        out.push_back((char)it->second);
        i += len;
      }
      return !out.empty();
    };
    using json = nlohmann::json;
    json enc;
    try {
      enc = json::parse(encoder_json.begin(), encoder_json.end());
    } catch (const std::exception& ex) {
      return make_error(Code::model_error, label + ": encoder.json is not valid JSON: " + ex.what());
    }
    if (!enc.is_object()) return make_error(Code::model_error, label + ": encoder.json is not a JSON object");
    int max_id = -1;
    std::string bytes;
    for (auto it = enc.begin(); it != enc.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= (1 << 24))
        return make_error(Code::model_error, label + ": encoder.json: token '" + it.key() + "' has no valid id");
      if (!to_bytes(it.key(), bytes))
        return make_error(Code::model_error, label + ": encoder.json: token '" + it.key() +
                                                 "' is not in GPT-2's byte-to-unicode alphabet");
      const int id = (int)it.value().get<int64_t>();
      if (!encoder_.emplace(bytes, id).second)
        return make_error(Code::model_error, label + ": encoder.json: token '" + it.key() + "' appears twice");
      if ((size_t)id >= decoder_.size()) decoder_.resize((size_t)id + 1);
      if (!decoder_[(size_t)id].empty())
        return make_error(Code::model_error, label + ": encoder.json: id " + std::to_string(id) + " is used twice");
      decoder_[(size_t)id] = bytes;
      max_id = std::max(max_id, id);
    }
    for (int b = 0; b < 256; ++b)
      if (!encoder_.count(std::string(1, (char)b))) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", b);
        return make_error(Code::model_error, label + ": encoder.json lacks the single-byte token for byte " + buf);
      }
    vocab_ = max_id + 1;
    // vocab.bpe: "#version" line, then one merge "a b" per line, best first.
    size_t line_no = 0, pos = 0;
    int rank = 0;
    while (pos < vocab_bpe.size()) {
      size_t nl = vocab_bpe.find('\n', pos);
      std::string_view line = vocab_bpe.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? vocab_bpe.size() : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
      size_t sp = line.find(' ');
      std::string a, b;
      if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos ||
          !to_bytes(line.substr(0, sp), a) || !to_bytes(line.substr(sp + 1), b))
        return make_error(Code::model_error, label + ": vocab.bpe line " + std::to_string(line_no) +
                                                 ": expected two tokens separated by one space");
      ranks_.emplace(pair_key(a, b), rank++);  // a repeated merge keeps its first (best) rank
    }
    return Status::Ok();
  }

  std::vector<int> encode(std::string_view text) override {
    std::vector<int> ids;
    for (std::string_view piece : gpt2_pretokenize(text)) {
      std::string key(piece);
      auto hit = cache_.find(key);
      if (hit == cache_.end()) {
        if (cache_.size() > 100000) cache_.clear();  // bound memory on long, varied input
        hit = cache_.emplace(key, bpe(key)).first;
      }
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
    }
    return ids;
  }

  std::string decode(const std::vector<int>& ids) override {
    std::string s;
    for (int id : ids)
      if (id >= 0 && (size_t)id < decoder_.size()) s += decoder_[(size_t)id];
    return s;
  }

  int vocab_size() override { return vocab_; }

 private:
  static std::string pair_key(const std::string& a, const std::string& b) {
    std::string k;
    const uint32_t n = (uint32_t)a.size();
    k.append((const char*)&n, 4);
    k += a;
    k += b;
    return k;
  }

  std::vector<int> bpe(const std::string& piece) const {
    std::vector<std::string> sym;
    for (char c : piece) sym.emplace_back(1, c);
    while (sym.size() > 1) {
      int best = std::numeric_limits<int>::max();
      size_t at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        auto it = ranks_.find(pair_key(sym[i], sym[i + 1]));
        if (it != ranks_.end() && it->second < best) best = it->second, at = i;
      }
      if (best == std::numeric_limits<int>::max()) break;
      // Merge every occurrence of the best pair, left to right.
      const std::string first = sym[at], second = sym[at + 1];
      std::vector<std::string> merged;
      for (size_t i = 0; i < sym.size();) {
        if (i + 1 < sym.size() && sym[i] == first && sym[i + 1] == second) {
          merged.push_back(first + second);
          i += 2;
        } else {
          merged.push_back(sym[i++]);
        }
      }
      sym.swap(merged);
    }
    std::vector<int> ids;
    for (const std::string& s : sym) {
      auto it = encoder_.find(s);
      if (it != encoder_.end()) {
        ids.push_back(it->second);
      } else {  // a merge whose result is not in the vocabulary: fall back to its bytes
        for (char c : s) ids.push_back(encoder_.at(std::string(1, c)));
      }
    }
    return ids;
  }

  std::unordered_map<std::string, int> encoder_;  // raw bytes -> id
  std::vector<std::string> decoder_;              // id -> raw bytes
  std::unordered_map<std::string, int> ranks_;    // pair_key(a, b) -> merge rank
  std::unordered_map<std::string, std::vector<int>> cache_;
  int vocab_ = 0;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_gpt2_tokenizer(std::string_view encoder_json, std::string_view vocab_bpe,
                                                       const std::string& label) {
  try {
    auto t = std::make_unique<Gpt2Tokenizer>();
    RFA_TRY(t->init(encoder_json, vocab_bpe, label));
    return std::unique_ptr<Tokenizer>(std::move(t));
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, label + ": out of host memory");
  } catch (const std::exception& ex) {
    return make_error(Code::model_error, label + ": " + ex.what());
  }
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const Model& model) {
  if (model.arch != Architecture::lm)
    return make_error(Code::invalid_argument, "model '" + model.name + "' is a " + architecture_name(model.arch) +
                                                  " model: only lm models have a tokenizer");
  if (model.tokenizer == "bytes") {
    if (model.vocab < 256)
      return make_error(Code::model_error, "model '" + model.name + "': byte tokenizer needs vocab >= 256, found " +
                                               std::to_string(model.vocab));
    return make_byte_tokenizer();
  }
  if (model.tokenizer == "gpt2") {
    const bool in_memory = model.source_dir.empty();  // load_model_memory: the files came with it
    const std::filesystem::path dir(model.source_dir);
    const std::string enc_path = in_memory ? model.name + "/encoder.json" : (dir / "encoder.json").string();
    const std::string bpe_path = in_memory ? model.name + "/vocab.bpe" : (dir / "vocab.bpe").string();
    if (in_memory && (model.encoder_json.empty() || model.vocab_bpe.empty()))
      return make_error(Code::model_error, "model '" + model.name + "' (from memory) is a GPT-2 BPE model, and " +
                                               "encoder.json or vocab.bpe was not given with it (rfa::ModelFiles)");
    auto enc = in_memory ? Result<std::string>(model.encoder_json) : read_file_text(enc_path, 256u << 20);
    if (!enc) return enc.status();
    auto bpe = in_memory ? Result<std::string>(model.vocab_bpe) : read_file_text(bpe_path, 256u << 20);
    if (!bpe) return bpe.status();
    auto tok = make_gpt2_tokenizer(*enc, *bpe, in_memory ? model.name : model.source_dir);
    if (!tok) return tok.status();
    if ((*tok)->vocab_size() > model.vocab)
      return make_error(Code::model_error, enc_path + ": token ids reach " + std::to_string((*tok)->vocab_size() - 1) +
                                               ", beyond the model's vocab_size " + std::to_string(model.vocab));
    return tok;
  }
  return make_error(Code::model_error, "model '" + model.name + "' names no tokenizer (config args.tokenizer: \"bytes\" or \"gpt2\")");
}

}  // namespace rfa
