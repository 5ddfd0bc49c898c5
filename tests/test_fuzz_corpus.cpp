// Replays the committed fuzz seed corpus (tests/fuzz/corpus) through the fuzzer's entry point:
// nothing may crash, and files named <parser>_ok_* / <parser>_bad_* must parse / be rejected by
// that parser (st = safetensors, cfg = config.json, npy = .npy; and the multi-file inputs of
// fuzz_entry.hpp: tok = the GPT-2 tokenizer's two files, mem = the C API's model load from memory).
// crash_* files are inputs a fuzzer run once crashed on (scripts/test-sanitizers.sh says how they
// get here): they must only not crash.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_entry.hpp"

namespace fs = std::filesystem;

namespace {

fs::path corpus_dir() {
  if (const char* s = std::getenv("RFA_SOURCE_DIR")) return fs::path(s) / "tests" / "fuzz" / "corpus";
#ifdef RFA_SOURCE_DIR
  return fs::path(RFA_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
#else
  return fs::path(__FILE__).parent_path() / "fuzz" / "corpus";
#endif
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

TEST_CASE("fuzz seed corpus replays without a crash") {
  const fs::path dir = corpus_dir();
  INFO("corpus: " << dir.string());
  REQUIRE(fs::is_directory(dir));
  int files = 0, checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = entry.path().filename().string();
    INFO("file: " << name);
    rfa::fuzz::Outcome o = rfa::fuzz::run_parsers(bytes.data(), bytes.size());
    ++files;
    // Every prefix truncation of the file must be survivable too.
    for (size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 64) rfa::fuzz::run_parsers(bytes.data(), n);
    struct Rule {
      const char* prefix;
      bool rfa::fuzz::Outcome::*field;
    };
    if (starts_with(name, "crash_")) ++checked;
    for (Rule r : {Rule{"st_", &rfa::fuzz::Outcome::safetensors_ok}, Rule{"cfg_", &rfa::fuzz::Outcome::config_ok},
                   Rule{"npy_", &rfa::fuzz::Outcome::npy_ok}, Rule{"tok_", &rfa::fuzz::Outcome::tokenizer_ok},
                   Rule{"mem_", &rfa::fuzz::Outcome::model_ok}}) {
      if (starts_with(name, std::string(r.prefix) + "ok_")) {
        CHECK(o.*(r.field));
        ++checked;
      }
      if (starts_with(name, std::string(r.prefix) + "bad_")) {
        CHECK(!(o.*(r.field)));
        ++checked;
      }
    }
  }
  CHECK(files >= 10);
  CHECK(checked == files);
}
