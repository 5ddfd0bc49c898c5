// libFuzzer target for the hostile-input parsers (fuzz_entry.hpp): safetensors, config.json, .npy,
// the GPT-2 pre-tokenizer and tokenizer files, the C API's model load from memory. Build with
// -DRFA_BUILD_FUZZERS=ON and clang (scripts/test-sanitizers.sh does, and runs it); by hand:
//   build-asan/tests/fuzz/fuzz_parsers NEW_DIR tests/fuzz/corpus -max_len=65536
#include "fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rfa::fuzz::run_parsers(data, size);
  return 0;
}
