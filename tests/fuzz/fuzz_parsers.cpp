// libFuzzer target for the model-folder parsers: safetensors (from memory, every tensor converted),
// config.json, .npy and the GPT-2 pre-tokenizer. Build with -DRFA_BUILD_FUZZERS=ON and clang; run
//   build/tests/fuzz/fuzz_parsers tests/fuzz/corpus -max_len=65536
#include "fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rfa::fuzz::run_parsers(data, size);
  return 0;
}
