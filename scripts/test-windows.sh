#!/usr/bin/env bash
# Windows x86-64: cross-builds RFA-VK with MinGW-w64 into build-windows/ (rfa.dll with its import
# library librfa.dll.a, the static librfa.a, rfa-run.exe, rfa-bench.exe, rfa-make-model.exe,
# rfa-viewer.exe, the examples' programs and every test) and runs the test suite under Wine, inside
# Xvfb (Wine's Vulkan needs an X display), on the host's lavapipe through Wine's vulkan-1.dll; then
# packs the zip (cpack) and tests it unpacked (package_zip: tests/install_test.sh --windows).
# The viewer's GLFW and Dear ImGui are built first, from Debian's source packages that
# install-deps.sh fetched, into build-windows/third-party/prefix (cmake/viewer-deps/).
# docs/install.md says what runs and what does not.
#   scripts/test-windows.sh                  the whole suite
#   scripts/test-windows.sh ci               what CI runs: the libraries, the programs, the examples
#                                            and the CI_TESTS below (built alone: a fraction of the time)
#   scripts/test-windows.sh -R 'context|c_api'   a subset: the arguments go to ctest (-R, -E, -j ...)
# Wine exposes no Vulkan validation layer, so the suites run without one (RFA_TEST_VALIDATION=OFF)
# and say so; the cases that need a layer skip that part with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh windows
root=$(pwd)
# CI's subset: the context and its loader, files (UTF-8 paths, 64-bit offsets, replacing renames),
# a session, the zoo's goldens on the GPU, the C API, the programs and the examples.
# The zip, unpacked (package_zip): the demo, the viewer's headless check, an outside app.
CI_TESTS='^(test_(context|loader|npy|safetensors|config|session|goldens)|c_api_test|library_exports(_reference)?|viewer_links_no_loader|(rfa_run|viewer)_no_vulkan_loader|example_.*|package_zip)$'
CI_TARGETS=(rfa rfa_shared rfa_reference rfa_reference_shared rfa-run rfa-make-model rfa-bench rfa-viewer hello_rfa_cpp
            hello_rfa_c hello_rfa_cpp_static hello_rfa_c_static check_with_twin test_context test_loader test_npy
            test_safetensors test_config test_session test_goldens c_api_test)
targets=()
if [ "${1:-}" = "ci" ]; then
  shift
  targets=(--target "${CI_TARGETS[@]}")
  set -- -R "$CI_TESTS" "$@"
fi
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
toolchain=$root/cmake/toolchains/x86_64-w64-mingw32.cmake
SECONDS=0
# GLFW and ImGui for MinGW, once per release of their sources (.rfa-version, fetch-viewer-sources.sh).
deps=$root/build-windows/third-party
versions=$(cat "$deps/src/glfw3/.rfa-version" "$deps/src/imgui/.rfa-version")
if [ "$(cat "$deps/prefix/.rfa-versions" 2>/dev/null)" != "$versions" ]; then
  rm -rf "$deps/build" "$deps/prefix"
  { cmake -S cmake/viewer-deps -B "$deps/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
      -DRFA_VIEWER_SOURCES="$deps/src" -DCMAKE_INSTALL_PREFIX="$deps/prefix" "${launcher[@]}" &&
    cmake --build "$deps/build" -j"$(nproc)" && cmake --install "$deps/build"; } > "$deps/build.log" 2>&1 ||
    { tail -60 "$deps/build.log"; exit 1; }
  echo "$versions" > "$deps/prefix/.rfa-versions"
  echo "windows: GLFW and Dear ImGui (${versions//$'\n'/, }) took ${SECONDS} s"
fi
cmake -S . -B build-windows -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$root/scripts/wine-run.sh" -DCMAKE_FIND_ROOT_PATH="$deps/prefix" \
  -DRFA_BUILD_VIEWER=ON -DRFA_TEST_VALIDATION=OFF "${launcher[@]}" > build-windows.log 2>&1 ||
  { cat build-windows.log; exit 1; }
SECONDS=0
cmake --build build-windows -j"$(nproc)" "${targets[@]}" >> build-windows.log 2>&1 || { tail -60 build-windows.log; exit 1; }
echo "windows: build took ${SECONDS} s"
SECONDS=0

# A Wine prefix of the build's own (created on first use, ~30 s), kept between runs.
export WINEPREFIX="${WINEPREFIX:-$root/build-windows/wineprefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# One X display for the whole run; one wineserver kept alive across the tests (-p), so that each
# test does not pay Wine's start-up; shut down (-k: this prefix's server only) at the end. Wine's
# background services (winedevice.exe) are started here, before CTest: started by the first test
# they would inherit its output pipe and CTest would wait for them forever.
xvfb-run -a bash -c '
  set -e
  # A new prefix: wineboot leaves its server running for a while; wait for it to end, or -p fails.
  [ -f "$WINEPREFIX/system.reg" ] || { wineboot --init > /dev/null 2>&1; wineserver -w; }
  wineserver -p
  wine cmd /c exit > /dev/null 2>&1 < /dev/null
  rc=0
  (cd build-windows && ctest --output-on-failure "$@") || rc=$?
  wineserver -k || true
  exit $rc' _ "$@" || { rc=$?; echo "windows: the tests under Wine failed (exit $rc)"; exit $rc; }
echo "windows: tests took ${SECONDS} s"
