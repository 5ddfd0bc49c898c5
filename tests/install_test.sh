#!/usr/bin/env bash
# The SDK as a user gets it (CTest: install_examples; package_zip in a Windows cross build).
#   install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR [--windows]
# 1. The package (cmake/Package.cmake): `cpack` of the build (Linux: the .tar.gz and the .deb;
#    --windows, a MinGW-w64 cross build: the .zip), unpacked into a fresh folder; then, against that
#    folder only: its layout; the demo (rfa-run with no argument finds the zoo beside itself); the
#    viewer's headless check (tests/viewer_zoo_check.cpp --only spiral-filter, on the folder's
#    rfa-viewer and zoo); the examples it carries, built as an outside app with find_package(rfa)
#    (shared and static, the CPU twin's component) and run. Linux also builds them with pkg-config
#    and checks the .deb (its fields; unpacked, its programs run). --windows: every program runs
#    under Wine (inside scripts/test-windows.sh's Xvfb) with nothing on PATH: each DLL a file of
#    bin/ imports is in bin/ or is Windows' own, and the examples, built with the MinGW toolchain,
#    get rfa.dll copied beside them by their own CMake.
# 2. Linux: `cmake --install` into a temporary prefix, and the Python package pip-installed from it
#    into a venv of Debian's python3, finding that prefix's library with no variable set.
# RFA_VIEWER_CHECK names a built viewer_zoo_check; without it the script compiles one (host c++).
set -euo pipefail
# `cmd | grep -q` under pipefail is flaky: grep quits at the first match, cmd's next write gets
# SIGPIPE and the pipeline fails although it matched. This grep reads its input to the end.
drain_grep() { grep "$@" > /dev/null; }
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) work=$3
windows=0
[ "${4:-}" = "--windows" ] && windows=1
rm -rf "$work"
mkdir -p "$work/elsewhere"
work=$(cd "$work" && pwd)
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
# The package's programs see none of the tests' own variables; RFA_VALIDATION stays (Linux: the
# layer is on, and any validation message fails them).
unset RFA_SOURCE_DIR RFA_BUILD_DIR RFA_MODEL RFA_LIBRARY RFA_REFERENCE_LIBRARY RFA_PREFIX RFA_VIEWER
run=()
exe=""
if [ $windows = 1 ]; then
  run=(wine)
  exe=.exe
  unset WINEPATH  # Wine's PATH: its own folders only
  export WINEDEBUG=${WINEDEBUG:--all}
  objdump=x86_64-w64-mingw32-objdump
fi
# Whether a program loads the librfa.so of the prefix (paths compared after resolving links and ..).
uses_prefix_lib() {
  local got
  got=$(ldd "$1" | awk '/librfa\.so/ {print $3}')
  [ -n "$got" ] && [ "$(readlink -f "$got")" = "$(readlink -f "$prefix/lib/librfa.so")" ]
}
# The files every install and package holds (and, for Linux, a .so / for Windows a .dll layout).
check_layout() {
  local p=$1 f files
  files=(lib/librfa.a include/rfa/rfa.h include/rfa/session.hpp include/rfa/tokenizer.hpp
         include/rfa/environment.hpp include/rfa/environment.h include/rfa/reference.hpp lib/librfa_reference.a
         lib/cmake/rfa/rfaReferenceTargets.cmake lib/pkgconfig/rfa_reference.pc lib/cmake/rfa/rfaConfig.cmake
         lib/cmake/rfa/rfaConfigVersion.cmake lib/pkgconfig/rfa.pc "bin/rfa-run$exe" "bin/rfa-make-model$exe"
         "bin/rfa-bench$exe" share/rfa/models/spiral-filter/model.safetensors share/rfa/models/tiny-char-lm/config.json
         share/rfa/python/pyproject.toml share/doc/rfa/README.md share/doc/rfa/docs/math.md
         share/doc/rfa/examples/c/hello_rfa.c share/doc/rfa/examples/CMakeLists.txt)
  if [ $windows = 1 ]; then
    files+=(bin/rfa.dll bin/rfa_reference.dll lib/librfa.dll.a lib/librfa_reference.dll.a include/vulkan/vulkan.h)
  else
    files+=(lib/librfa.so lib/librfa_reference.so)
  fi
  [ -e "$build/viewer/rfa-viewer$exe" ] && files+=("bin/rfa-viewer$exe")
  for f in "${files[@]}"; do
    [ -e "$p/$f" ] || fail "$f is not in $p"
  done
  # Exactly the public headers, nothing from runtime/src.
  diff <(cd "$src/runtime/include/rfa" && ls) <(cd "$p/include/rfa" && ls) || fail "$p/include/rfa differs from runtime/include/rfa"
  [ ! -e "$p/share/rfa/models/train" ] || fail "the training scripts are not part of the zoo"
}

# ---- 1. the package --------------------------------------------------------------------------
step "cpack of $build"
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/package") > "$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack"; }
if [ $windows = 1 ]; then archive=$(ls "$work"/package/rfa-vk-*-windows-*.zip); else archive=$(ls "$work"/package/rfa-vk-*-linux-*.tar.gz); fi
echo "$(basename "$archive"): $(du -k "$archive" | cut -f1) KiB"
mkdir -p "$work/unpacked"
(cd "$work/unpacked" && cmake -E tar xf "$archive") || fail "unpacking $archive"
[ "$(ls "$work/unpacked" | wc -l)" = 1 ] || fail "$(basename "$archive") does not unpack into one folder"
prefix=$(cd "$work"/unpacked/* && pwd)
models=$prefix/share/rfa/models
check_layout "$prefix"
[ ! -e "$prefix/share/rfa/python/rfa/_install.py" ] || fail "the archive records a prefix (_install.py) that exists only here"

if [ $windows = 1 ]; then
  step "the DLLs bin/ imports: in bin/ or Windows' own"
  system32=${WINEPREFIX:-$HOME/.wine}/drive_c/windows/system32
  [ -d "$system32" ] || fail "no Wine prefix at ${WINEPREFIX:-$HOME/.wine}"
  for f in "$prefix"/bin/*.exe "$prefix"/bin/*.dll; do
    for dll in $("$objdump" -p "$f" | sed -n 's/^[[:space:]]*DLL Name: //p'); do
      [ -e "$prefix/bin/$dll" ] || ls "$system32" | drain_grep -ix "$dll" ||
        fail "$(basename "$f") imports $dll, which is neither in bin/ nor a Windows DLL"
    done
  done
else
  # The CPU twin is a library of its own: librfa has none of it, librfa_reference needs librfa.
  if nm -DC "$prefix/lib/librfa.so" | drain_grep "reference_forward"; then fail "librfa.so exports the CPU twin"; fi
  nm -DC --defined-only "$prefix/lib/librfa_reference.so" | drain_grep "rfa::reference_forward(" ||
    fail "librfa_reference.so does not export rfa::reference_forward"
  readelf -d "$prefix/lib/librfa_reference.so" | drain_grep "NEEDED.*\[librfa\.so" || fail "librfa_reference.so does not need librfa.so"
fi

step "the demo and the programs of the package"
# From another folder: rfa-run finds its default model beside itself (bin/../share/rfa/models).
(cd "$work/elsewhere" && "${run[@]}" "$prefix/bin/rfa-run$exe") > "$work/demo.txt" 2>&1 || { cat "$work/demo.txt"; fail "the demo"; }
{ drain_grep "the spiral-filter demo" "$work/demo.txt" && drain_grep "Kalman filter" "$work/demo.txt"; } || fail "the demo's report"
"${run[@]}" "$prefix/bin/rfa-run$exe" --version | drain_grep "rfa-run" || fail "rfa-run --version"
"${run[@]}" "$prefix/bin/rfa-make-model$exe" --out "$work/made" --arch signal --layers 1 --heads 2 --d-e 8 --d-in 2 > /dev/null
"${run[@]}" "$prefix/bin/rfa-run$exe" --model "$work/made" --summary --json | drain_grep '"architecture":"signal"' || fail "rfa-run on a made model"
"${run[@]}" "$prefix/bin/rfa-run$exe" --model "$work/made" --cpu-reference --json > "$work/cpu.json" || fail "rfa-run --cpu-reference"
grep -q 'cpu-reference' "$work/cpu.json" || fail "rfa-run --cpu-reference did not run the twin"

if [ -e "$prefix/bin/rfa-viewer$exe" ]; then
  step "the viewer's headless check (viewer_zoo_check) on the package's rfa-viewer and zoo"
  check=${RFA_VIEWER_CHECK:-}
  if [ -z "$check" ]; then
    check=$work/viewer_zoo_check
    c++ -std=c++20 -O1 "$src/tests/viewer_zoo_check.cpp" -o "$check" || fail "compiling tests/viewer_zoo_check.cpp"
  fi
  viewer=$prefix/bin/rfa-viewer
  if [ $windows = 1 ]; then
    viewer=$work/rfa-viewer-wine
    printf '#!/bin/sh\nexec wine "%s" "$@"\n' "$prefix/bin/rfa-viewer.exe" > "$viewer"
    chmod +x "$viewer"
  fi
  "$check" "$src" "$viewer" "$work/viewer" --models "$models" --only spiral-filter || fail "the viewer's headless check"
fi

step "the examples the package carries, an outside app: find_package(rfa)"
cross=()
[ $windows = 1 ] && cross=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchains/x86_64-w64-mingw32.cmake" -DCMAKE_FIND_ROOT_PATH="$prefix")
cmake -S "$prefix/share/doc/rfa/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release "${cross[@]}" \
  > "$work/ex.log" 2>&1 || { cat "$work/ex.log"; fail "configuring the examples"; }
grep -q "the model zoo: $models" "$work/ex.log" || fail "rfa_MODELS_DIR does not point into the package"
grep -q "the CPU twin (reference): TRUE" "$work/ex.log" || fail "find_package(rfa OPTIONAL_COMPONENTS reference) did not find it"
drain_grep "^rfa_DIR:PATH=$prefix/lib/cmake/rfa$" "$work/ex/CMakeCache.txt" || fail "find_package(rfa) found another package than $prefix"
cmake --build "$work/ex" -j2 >> "$work/ex.log" 2>&1 || { tail -40 "$work/ex.log"; fail "building the examples"; }
if [ $windows = 1 ]; then
  for dll in rfa.dll rfa_reference.dll; do
    cmp -s "$work/ex/$dll" "$prefix/bin/$dll" || fail "the examples' CMake did not copy the package's $dll beside them"
  done
else
  uses_prefix_lib "$work/ex/hello_rfa_cpp" || fail "hello_rfa_cpp does not use the package's librfa.so"
  for s in hello_rfa_cpp_static hello_rfa_c_static check_with_twin_static; do
    if ldd "$work/ex/$s" | drain_grep librfa; then fail "$s links a shared librfa"; fi
  done
  ldd "$work/ex/check_with_twin" | drain_grep "librfa_reference\.so" || fail "check_with_twin does not use librfa_reference.so"
  uses_prefix_lib "$work/ex/check_with_twin" || fail "check_with_twin does not use the package's librfa.so"
fi
ex() { local p=$1; shift; (cd "$work/elsewhere" && "${run[@]}" "$work/ex/$p$exe" "$@"); }
ex hello_rfa_cpp "$models/spiral-filter"
ex hello_rfa_cpp "$models/tiny-char-lm" | drain_grep "^text: The " || fail "hello_rfa_cpp on the LM"
ex hello_rfa_cpp_static "$models/spiral-filter" > /dev/null
ex hello_rfa_c_static "$models/tiny-char-lm" > /dev/null
ex hello_rfa_c "$models/tiny-char-lm"
ex hello_rfa_c "$models/spiral-filter" > /dev/null
ex check_with_twin "$models/spiral-filter" || fail "check_with_twin (rfa::reference)"
ex check_with_twin "$models/tiny-char-lm" > /dev/null || fail "check_with_twin on the LM"
ex check_with_twin_static "$models/spiral-filter" > /dev/null || fail "check_with_twin_static (rfa::reference_static)"
if ex hello_rfa_c "$work/no-such-model" 2> "$work/err.txt"; then fail "hello_rfa_c accepted a missing model"; fi
grep -q "no-such-model" "$work/err.txt" || fail "the C example's error does not name the folder"

if [ $windows = 1 ]; then
  echo "install_test: the Windows package passed"
  exit 0
fi

# Without the component the package still configures (it is optional), and a REQUIRED one is refused.
mkdir -p "$work/nocomp/prefix"
cp -r "$prefix/lib" "$prefix/include" "$work/nocomp/prefix/"
rm -f "$work/nocomp/prefix/lib/cmake/rfa/rfaReferenceTargets"*.cmake "$work/nocomp/prefix/lib/librfa_reference"*
cat > "$work/nocomp/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(nocomp LANGUAGES CXX)
find_package(rfa 0.1 REQUIRED OPTIONAL_COMPONENTS reference)
if(rfa_reference_FOUND OR TARGET rfa::reference)
  message(FATAL_ERROR "the reference component was found where it is not installed")
endif()
find_package(rfa 0.1 QUIET COMPONENTS reference)
if(rfa_FOUND)
  message(FATAL_ERROR "a REQUIRED reference component was accepted where it is not installed")
endif()
CM
cmake -S "$work/nocomp" -B "$work/nocomp/build" -DCMAKE_PREFIX_PATH="$work/nocomp/prefix" > "$work/nocomp.log" 2>&1 ||
  { cat "$work/nocomp.log"; fail "the reference component is not optional"; }

step "examples with pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion rfa)" = "$(sed -n 's/^project(rfa_vk VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "pkg-config version"
libdir=$(pkg-config --variable=libdir rfa)
[ "$(cd "$libdir" && pwd)" = "$prefix/lib" ] || fail "rfa.pc libdir $libdir is not $prefix/lib"
# shellcheck disable=SC2046
c++ -std=c++20 "$src/examples/cpp/hello_rfa.cpp" $(pkg-config --cflags --libs rfa) -Wl,-rpath,"$libdir" -o "$work/pc_cpp"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$src/examples/c/hello_rfa.c" $(pkg-config --cflags --libs rfa) -lm -Wl,-rpath,"$libdir" -o "$work/pc_c"
uses_prefix_lib "$work/pc_c" || fail "pc_c does not use the package's librfa.so"
# The twin through pkg-config rfa_reference (it requires rfa).
# shellcheck disable=SC2046
c++ -std=c++20 "$src/examples/reference/check_with_twin.cpp" $(pkg-config --cflags --libs rfa_reference) \
  -Wl,-rpath,"$libdir" -o "$work/pc_twin"
"$work/pc_twin" "$models/spiral-filter" > /dev/null || fail "pc_twin (pkg-config rfa_reference)"
"$work/pc_cpp" "$models/tiny-char-lm" > /dev/null
"$work/pc_c" "$models/spiral-filter" > /dev/null
unset PKG_CONFIG_PATH
# The Python package straight from the unpacked folder (it finds the folder's library four levels up).
PYTHONPATH=$prefix/share/rfa/python PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c \
  "import rfa, os; p = rfa.library_path(); assert p == os.path.join('$prefix', 'lib', 'librfa.so'), p" ||
  fail "the package's Python does not find the package's librfa.so"

step "the .deb"
deb=$(ls "$work"/package/rfa-vk_*.deb)
dpkg-deb --field "$deb" Package Version Depends > "$work/deb.txt"
drain_grep "^Depends: .*libvulkan1" "$work/deb.txt" || { cat "$work/deb.txt"; fail "the .deb does not depend on libvulkan1"; }
dpkg-deb -x "$deb" "$work/deb"
for f in usr/lib/librfa.so usr/lib/cmake/rfa/rfaConfig.cmake usr/include/rfa/rfa.h usr/bin/rfa-run \
         usr/share/rfa/models/tiny-char-lm/config.json; do
  [ -e "$work/deb/$f" ] || fail "the .deb has no /$f"
done
drain_grep '^PREFIX = "/usr"$' "$work/deb/usr/share/rfa/python/rfa/_install.py" || fail "the .deb's Python does not record /usr"
"$work/deb/usr/bin/rfa-run" --model "$work/deb/usr/share/rfa/models/tiny-char-lm" --prompt "The " --generate 4 --json |
  drain_grep '"generated"' || fail "the .deb's rfa-run"

# ---- 2. cmake --install ----------------------------------------------------------------------
prefix=$work/prefix
models=$prefix/share/rfa/models
step "cmake --install to $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
check_layout "$prefix"

step "Python: pip install --no-build-isolation into a venv of Debian's python3, library from the prefix"
py=${RFA_PYTHON:-/usr/bin/python3}
"$py" -m venv --system-site-packages "$work/venv" > "$work/venv.log" 2>&1 || { cat "$work/venv.log"; fail "venv"; }
[ -f "$prefix/share/rfa/python/rfa/_install.py" ] || fail "cmake --install did not record the prefix for Python"
# As docs/python.md says: pip install straight from the prefix.
"$work/venv/bin/python" -m pip install --no-build-isolation --no-index "$prefix/share/rfa/python" > "$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; fail "pip install"; }
# No RFA_* variable at all, from a directory that has nothing to do with the prefix or the sources.
unset_rfa=$(env | sed -n 's/^\(RFA_[A-Za-z0-9_]*\)=.*/-u \1/p')
# shellcheck disable=SC2086
(cd "$work/elsewhere" && env $unset_rfa "$work/venv/bin/python" - "$prefix" "$models" <<'EOF'
import os, sys
import numpy as np
import rfa
prefix, models = sys.argv[1], sys.argv[2]
assert not [k for k in os.environ if k.startswith("RFA_")], "an RFA_ variable is set"
assert rfa.__file__.startswith(os.path.join(os.path.dirname(os.getcwd()), "venv")), rfa.__file__
assert rfa.library_path() == os.path.join(prefix, "lib", "librfa.so"), rfa.library_path()
m = rfa.load_model(os.path.join(models, "spiral-filter"))
x = np.load(os.path.join(models, "spiral-filter", "golden", "regular_input.npy"))
want = np.load(os.path.join(models, "spiral-filter", "golden", "regular_output.npy"))
y = rfa.Session(m, max_context=x.shape[1]).prefill(x)
assert np.abs(y - want).max() < 1e-4, np.abs(y - want).max()
# The CPU twin from the prefix's librfa_reference.so, found next to librfa.so.
r = m.reference(x)
assert np.abs(r - want).max() < 1e-4, np.abs(r - want).max()
from rfa import _lib
assert _lib._reference_path == os.path.join(prefix, "lib", "librfa_reference.so"), _lib._reference_path
print("python: installed package, no RFA_* variable, library", rfa.library_path(),
      "max |y - golden| %.2e" % np.abs(y - want).max())
EOF
) || fail "the installed Python package"
# RFA_PREFIX is followed when set.
env -u RFA_LIBRARY RFA_PREFIX="$prefix" "$work/venv/bin/python" -c \
  "import rfa, os; p = rfa.library_path(); assert p == os.path.join('$prefix', 'lib', 'librfa.so'), p" ||
  fail "RFA_PREFIX is not followed"
# Found next to itself too, before any prefix.
site=$("$work/venv/bin/python" -c "import rfa, os; print(os.path.dirname(rfa.__file__))")
cp "$prefix/lib/librfa.so" "$site/librfa.so"
env -u RFA_LIBRARY RFA_PREFIX=/nonexistent "$work/venv/bin/python" -c \
  "import rfa, os; p = rfa.library_path(); assert p == os.path.join('$site', 'librfa.so'), p; rfa.devices()" ||
  fail "librfa.so next to the package is not found"
"$work/venv/bin/python" -m rfa.convert --help > /dev/null || fail "python -m rfa.convert --help"
echo "install_test: all passed"
