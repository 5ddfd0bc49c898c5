#!/usr/bin/env bash
# ARM64 Linux: cross-compiles RFA-VK with Debian's g++-aarch64-linux-gnu
# (cmake/toolchains/aarch64-linux-gnu.cmake) into build-arm64 and runs tests under qemu-user
# (qemu-aarch64-static, called explicitly through CMAKE_CROSSCOMPILING_EMULATOR: no binfmt needed).
#
#   bash scripts/test-arm64.sh            # the tests that need no GPU (what CI runs)
#   bash scripts/test-arm64.sh smoke      # those, then a GPU smoke test on arm64 lavapipe (slow: see
#                                         # docs/install.md; did not finish in 400 s on a loaded machine)
#   bash scripts/test-arm64.sh all        # every test, GPU ones on arm64 lavapipe (slow under emulation)
#   bash scripts/test-arm64.sh -R REGEX   # the tests CTest selects
#
# The GPU runs use Debian's arm64 lavapipe (mesa-vulkan-drivers:arm64, multiarch) and validation
# layer, so the arm64 loader, driver, layer and runtime all run emulated, as on an arm64 machine.
set -euo pipefail
# `cmd | grep -q` under pipefail is flaky: grep quits at the first match, cmd's next write gets
# SIGPIPE and the pipeline fails although it matched. This grep reads its input to the end.
drain_grep() { grep "$@" > /dev/null; }
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh arm64

# Tests that touch no Vulkan device: parsers, loader, physics, the CPU twin, tokenizers, sampling order.
CPU_TESTS='^test_(config|safetensors|npy|tokenizer|loader|physics|linalg|fuzz_corpus|reference_(math|attention|model|acc|afa|rt))$'
# The GPU smoke test: the context under validation, a kernel against its twin, the zoo's goldens.
SMOKE_TESTS='^test_(context|goldens)$'

cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DRFA_BUILD_VIEWER=OFF > build-arm64.log 2>&1 || { cat build-arm64.log; exit 1; }
# The default and smoke modes build what they run (the libraries, rfa-run and those tests' programs:
# keep this list in step with CPU_TESTS and SMOKE_TESTS); `all` and -R build the whole tree.
targets=()
case "${1:-}" in
  all|-*) ;;
  *) targets=(--target rfa rfa_shared rfa-run test_config test_safetensors test_npy test_tokenizer test_loader
              test_physics test_linalg test_fuzz_corpus test_reference_math test_reference_attention
              test_reference_model test_reference_acc test_reference_afa test_reference_rt test_context test_goldens) ;;
esac
SECONDS=0
cmake --build build-arm64 -j"$(nproc)" "${targets[@]}" >> build-arm64.log 2>&1 || { tail -50 build-arm64.log; exit 1; }
echo "arm64: cross build took ${SECONDS} s"
file build-arm64/rfa-run | drain_grep 'ARM aarch64' || { echo "build-arm64/rfa-run is not an arm64 program"; exit 1; }

export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The arm64 lavapipe only: the loader would otherwise try (and warn about) the host's x86-64 drivers.
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json
cd build-arm64
case "${1:-}" in
  all) shift; ctest --output-on-failure -j"$(nproc)" "$@" ;;
  -*)  ctest --output-on-failure -j"$(nproc)" "$@" ;;
  *)
    SECONDS=0
    ctest --output-on-failure -j"$(nproc)" -R "$CPU_TESTS"
    echo "arm64: tests without a GPU took ${SECONDS} s"
    [ "${1:-}" = "smoke" ] || exit 0
    SECONDS=0
    # rfa-run's own check: the device, a Linear op on it against the CPU.
    qemu-aarch64-static -L /usr/aarch64-linux-gnu ./rfa-run --self-check
    ctest --output-on-failure -j"$(nproc)" -R "$SMOKE_TESTS"
    echo "arm64: GPU smoke test (lavapipe arm64) took ${SECONDS} s"
    ;;
esac
