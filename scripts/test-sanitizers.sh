#!/usr/bin/env bash
# The sanitizer half of scripts/test.sh (after the main suite), built with clang (the main build
# is g++), so the library, the programs and these tests are also held to clang's warnings (errors
# where RFA_WERROR=ON, as in CI). Each part prints its time. docs/robustness.md says what each
# covers and why each suppression is there.
#  1. build-asan, AddressSanitizer + UBSan with leak checking: the parsers' tests, the session
#     test, the fault sweep (CI's subset: the first error of every call site of every scenario;
#     RFA_FAULT_SWEEP=full tries every error), the recovery tests in C++ and C. The tests hold the
#     driver and the layer loaded (tests/hold_driver.hpp), so every leak names its module; one
#     suppression, the validation layer's own state (tests/sanitizers/lsan.supp, says why).
#  2. the libFuzzer target (same build: every target instrumented for coverage) for
#     RFA_FUZZ_SECONDS (60) over tests/fuzz/corpus: safetensors, config.json, .npy, the tokenizer's
#     files and the C API's model load from memory. A crash fails the run and leaves the input in
#     build-asan/fuzz-artifacts/; copied into tests/fuzz/corpus as crash_<name>, test_fuzz_corpus
#     replays it from then on.
#  3. build-tsan, ThreadSanitizer: the session, stream, generate and threads suites; any report
#     fails (tests/sanitizers/tsan.supp: the driver's, loader's and layer's own synchronization,
#     which TSan cannot see).
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
SUPP="$PWD/tests/sanitizers"
SAN_CC=(); command -v clang++ > /dev/null && SAN_CC=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
compiler() { sed -n 's|^CMAKE_CXX_COMPILER:[A-Z]*=\(.*/\)*||p' "$1/CMakeCache.txt"; }
# The parsers never open a device; the GPU tests run on lavapipe under the validation layer.
PARSER_TESTS="test_safetensors test_config test_loader test_npy test_tokenizer test_fuzz_corpus"
GPU_TESTS="test_session test_fault_sweep test_fault_recovery c_api_fault_test"
TSAN_TESTS="test_session test_stream test_generate test_threads"

# ---- 1. AddressSanitizer + UBSan, leaks checked ---------------------------------------------------
SECONDS=0
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRFA_SANITIZE=ON -DRFA_BUILD_VIEWER=OFF \
  -DRFA_BUILD_FUZZERS=ON -DRFA_WERROR="${RFA_WERROR:-OFF}" "${SAN_CC[@]}" > build-asan.log 2>&1 ||
  { cat build-asan.log; exit 1; }
# shellcheck disable=SC2086
cmake --build build-asan -j"$(nproc)" --target $PARSER_TESTS $GPU_TESTS fuzz_parsers rfa-run rfa-make-model rfa-bench \
  >> build-asan.log 2>&1 || { tail -50 build-asan.log; exit 1; }
echo "sanitizer build ($(compiler build-asan)): library, programs, $PARSER_TESTS $GPU_TESTS, fuzz_parsers: ${SECONDS} s"
SECONDS=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -R "test_(safetensors|config|loader|npy|tokenizer|fuzz_corpus)$" \
  && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0" \
     ctest --output-on-failure -R "^(test_session|test_fault_sweep|test_fault_recovery|c_api_fault_test)$")
echo "sanitizer tests (leaks checked): ${SECONDS} s"

# ---- 2. the parsers' fuzzer, bounded ---------------------------------------------------------------
if [ -x build-asan/tests/fuzz/fuzz_parsers ]; then
  SECONDS=0
  rm -rf build-asan/fuzz-new && mkdir -p build-asan/fuzz-new build-asan/fuzz-artifacts
  # New inputs go to fuzz-new (the committed corpus is only read); -max_len fits the model seeds.
  ASAN_OPTIONS=detect_leaks=1 build-asan/tests/fuzz/fuzz_parsers build-asan/fuzz-new tests/fuzz/corpus \
    -max_total_time="${RFA_FUZZ_SECONDS:-60}" -max_len=65536 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build-asan/fuzz-artifacts/ > build-asan/fuzz.log 2>&1 ||
    { tail -60 build-asan/fuzz.log; echo "fuzz_parsers found a crash: build-asan/fuzz-artifacts/ (copy it into tests/fuzz/corpus as crash_<name>)"; exit 1; }
  echo "fuzz_parsers: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' build-asan/fuzz.log | awk '{print $NF}') inputs in ${SECONDS} s, no crash"
else
  echo "note: fuzz_parsers needs clang (libFuzzer); not run"
fi

# ---- 3. ThreadSanitizer --------------------------------------------------------------------------
if [ ${#SAN_CC[@]} -gt 0 ]; then
  SECONDS=0
  # -O1: TSan's advice for speed with usable reports; no tools beyond what the suites need.
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DRFA_SANITIZE_THREAD=ON -DRFA_BUILD_VIEWER=OFF -DRFA_BUILD_TOOLS=OFF \
    -DRFA_WERROR="${RFA_WERROR:-OFF}" "${SAN_CC[@]}" > build-tsan.log 2>&1 || { cat build-tsan.log; exit 1; }
  # shellcheck disable=SC2086
  cmake --build build-tsan -j"$(nproc)" --target $TSAN_TESTS >> build-tsan.log 2>&1 || { tail -50 build-tsan.log; exit 1; }
  echo "thread sanitizer build: ${SECONDS} s"
  SECONDS=0
  (cd build-tsan && TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:halt_on_error=1:second_deadlock_stack=1" \
     ctest --output-on-failure -R "^(test_session|test_stream|test_generate|test_threads)$")
  echo "thread sanitizer tests ($TSAN_TESTS), no report: ${SECONDS} s"
else
  echo "note: ThreadSanitizer needs clang; not run"
fi
