// Byte tokenizer, the GPT-2 pre-tokenizer, and GPT-2 BPE on a tiny hand-made vocabulary.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer.hpp"

using namespace rfa;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kMixed = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac";  // héllo wörld — 日本

std::string utf8(int cp) {
  std::string s;
  if (cp < 0x80) s += (char)cp;
  else if (cp < 0x800) s += (char)(0xc0 | (cp >> 6)), s += (char)(0x80 | (cp & 0x3f));
  else s += (char)(0xe0 | (cp >> 12)), s += (char)(0x80 | ((cp >> 6) & 0x3f)), s += (char)(0x80 | (cp & 0x3f));
  return s;
}

// GPT-2's byte -> printable character table, written out independently of the tokenizer.
std::string byte_char(int b) {
  int n = 0;
  for (int x = 0; x < 256; ++x) {
    bool printable = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
    int cp = printable ? x : 256 + n++;
    if (x == b) return utf8(cp);
  }
  return "";
}

std::string chars(const std::string& raw) {
  std::string s;
  for (unsigned char c : raw) s += byte_char(c);
  return s;
}

struct TinyBpe {
  std::string encoder, merges;
  int id(const std::string& raw) const { return json::parse(encoder).at(chars(raw)).get<int>(); }
};

TinyBpe tiny_bpe() {
  json enc = json::object();
  for (int b = 0; b < 256; ++b) enc[byte_char(b)] = b;
  int next = 256;
  for (const char* tok : {"he", "ll", "hell", "hello", " w", "or", " wor", "\xc3\xa9"}) enc[chars(tok)] = next++;
  // "x y" merges into a token that is not in the vocabulary: the encoder falls back to bytes
  std::string merges = "#version: 0.2\n";
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}, {" w", "or"}, {"\xc3", "\xa9"}, {"x", "y"}})
    merges += chars(a) + " " + chars(b) + "\n";
  return {enc.dump(), merges};
}

std::vector<std::string> pieces(const std::string& s) {
  std::vector<std::string> out;
  for (std::string_view p : gpt2_pretokenize(s)) out.emplace_back(p);
  return out;
}

}  // namespace

TEST_CASE("byte tokenizer round-trips any bytes") {
  auto t = make_byte_tokenizer();
  CHECK(t->vocab_size() == 256);
  std::string s = kMixed + std::string("\0\xff\x80 tail", 8);
  std::vector<int> ids = t->encode(s);
  CHECK(ids.size() == s.size());
  CHECK(ids[1] == 0xc3);
  CHECK(t->decode(ids) == s);
  CHECK(t->decode({72, 105, -1, 256, 1000}) == "Hi");  // out-of-range ids are skipped
}

TEST_CASE("GPT-2 pre-tokenizer follows the regex") {
  using V = std::vector<std::string>;
  CHECK(pieces("Hello world") == V{"Hello", " world"});
  CHECK(pieces("don't stop") == V{"don", "'t", " stop"});
  CHECK(pieces("I'm we'll they're you've he'd it's") ==
        V{"I", "'m", " we", "'ll", " they", "'re", " you", "'ve", " he", "'d", " it", "'s"});
  CHECK(pieces("a  b") == V{"a", " ", " b"});
  CHECK(pieces("x\n\ny") == V{"x", "\n", "\n", "y"});
  CHECK(pieces("end   ") == V{"end", "   "});
  CHECK(pieces("abc123 456!? ?? '") == V{"abc", "123", " 456", "!?", " ??", " '"});
  CHECK(pieces(" 's") == V{" '", "s"});
  CHECK(pieces("\t\tword") == V{"\t", "\t", "word"});
  CHECK(pieces(kMixed) == V{"h\xc3\xa9llo", " w\xc3\xb6rld", " \xe2\x80\x94", " \xe6\x97\xa5\xe6\x9c\xac"});
  CHECK(pieces("x\xc2\xa0y") == V{"x", "\xc2\xa0", "y"});   // no-break space is \s
  CHECK(pieces("\xc2\xb2x") == V{"\xc2\xb2", "x"});         // superscript two is \p{N}
  CHECK(pieces("a\xff\xfe b") == V{"a", "\xff\xfe", " b"});  // invalid UTF-8 bytes: not letters
  CHECK(pieces("").empty());
  // the pieces always tile the input
  std::mt19937 rng(3);
  for (int k = 0; k < 200; ++k) {
    std::string s;
    for (int i = 0; i < 40; ++i) s += (char)(rng() % 256);
    std::string joined;
    for (auto& p : pieces(s)) {
      CHECK(!p.empty());
      joined += p;
    }
    CHECK(joined == s);
  }
}

TEST_CASE("GPT-2 BPE on a tiny vocabulary") {
  TinyBpe v = tiny_bpe();
  auto r = make_gpt2_tokenizer(v.encoder, v.merges);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  Tokenizer& t = **r;
  CHECK(t.vocab_size() == 264);
  CHECK(t.encode("hello") == std::vector<int>{v.id("hello")});
  CHECK(t.encode("hello world") == std::vector<int>{v.id("hello"), v.id(" wor"), 'l', 'd'});
  CHECK(t.encode(" hello") == std::vector<int>{v.id(" "), v.id("hello")});
  CHECK(t.encode("h\xc3\xa9llo") == std::vector<int>{'h', v.id("\xc3\xa9"), v.id("ll"), 'o'});
  CHECK(t.encode("xyz") == std::vector<int>{'x', 'y', 'z'});  // merged token missing: bytes
  CHECK(t.encode("") .empty());
  for (const std::string& s : {kMixed, std::string("hello hello  world\n\n\tok"), std::string("a\0b\xff", 4),
                               std::string("don't DON'T 'll 123,456.7")}) {
    std::vector<int> ids = t.encode(s);
    for (int id : ids) CHECK((id >= 0 && id < 264));
    CHECK(t.decode(ids) == s);
  }
  CHECK(t.decode({v.id("hello"), 9999, -4, v.id(" wor")}) == "hello wor");
}

TEST_CASE("bad GPT-2 files are rejected") {
  TinyBpe v = tiny_bpe();
  auto err = [](std::string enc, std::string merges) {
    auto r = make_gpt2_tokenizer(enc, merges, "tok");
    REQUIRE(!r.ok());
    CHECK(r.status().code() == Code::model_error);
    return r.status().message();
  };
  json enc = json::parse(v.encoder);
  enc.erase(byte_char('A'));
  CHECK(err(enc.dump(), v.merges).find("0x41") != std::string::npos);
  CHECK(err("{\"a\": ", v.merges).find("not valid JSON") != std::string::npos);
  CHECK(err("[1]", v.merges).find("object") != std::string::npos);
  enc = json::parse(v.encoder);
  enc["zz"] = 5;  // id 5 already used
  CHECK(err(enc.dump(), v.merges).find("used twice") != std::string::npos);
  enc = json::parse(v.encoder);
  enc["\xe6\x97\xa5"] = 400;  // not a byte-to-unicode character
  CHECK(err(enc.dump(), v.merges).find("alphabet") != std::string::npos);
  enc = json::parse(v.encoder);
  enc["q q"] = "x";
  CHECK(err(enc.dump(), v.merges).find("no valid id") != std::string::npos);
  CHECK(err(v.encoder, "#version: 0.2\nh e\nonlyone\n").find("line 3") != std::string::npos);
  CHECK(err(v.encoder, "a b c\n").find("line 1") != std::string::npos);
}

TEST_CASE("load_tokenizer reads the model folder") {
  fs::path dir = fs::temp_directory_path() / "rfa-test-tokenizer";
  fs::remove_all(dir);
  fs::create_directories(dir);
  TinyBpe v = tiny_bpe();
  std::ofstream(dir / "encoder.json", std::ios::binary) << v.encoder;
  std::ofstream(dir / "vocab.bpe", std::ios::binary) << v.merges;
  Model m;
  m.name = "tiny";
  m.arch = Architecture::lm;
  m.vocab = 300;
  m.tokenizer = "gpt2";
  m.source_dir = dir.string();
  auto t = load_tokenizer(m);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK((*t)->decode((*t)->encode(kMixed)) == kMixed);
  m.vocab = 260;  // the files use ids up to 263
  CHECK(load_tokenizer(m).status().code() == Code::model_error);
  m.tokenizer = "bytes";
  CHECK(load_tokenizer(m).ok());
  m.tokenizer = "";
  CHECK(load_tokenizer(m).status().code() == Code::model_error);
  m.arch = Architecture::signal;
  CHECK(load_tokenizer(m).status().code() == Code::invalid_argument);
  m.arch = Architecture::lm;
  m.tokenizer = "gpt2";
  m.vocab = 300;
  fs::remove(dir / "vocab.bpe");
  CHECK(load_tokenizer(m).status().code() == Code::io_error);
  fs::remove_all(dir);
}
