#!/usr/bin/env bash
# The SDK as a user gets it: `cmake --install` into a temporary prefix, then, against that prefix
# only, the examples built with find_package(rfa) (shared and static) and with pkg-config, the
# installed rfa-run, and the Python package installed with pip into a venv of Debian's python3.
#   install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
# `cmd | grep -q` under pipefail is flaky: grep quits at the first match, cmd's next write gets
# SIGPIPE and the pipeline fails although it matched. This grep reads its input to the end.
drain_grep() { grep "$@" > /dev/null; }
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) work=$3
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
# Whether a program loads the librfa.so of the prefix (paths compared after resolving links and ..).
uses_prefix_lib() {
  local got
  got=$(ldd "$1" | awk '/librfa\.so/ {print $3}')
  [ -n "$got" ] && [ "$(readlink -f "$got")" = "$(readlink -f "$prefix/lib/librfa.so")" ]
}

step "cmake --install to $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for f in lib/librfa.a lib/librfa.so include/rfa/rfa.h include/rfa/session.hpp include/rfa/tokenizer.hpp \
         include/rfa/environment.hpp include/rfa/environment.h include/rfa/reference.hpp \
         lib/librfa_reference.a lib/librfa_reference.so lib/cmake/rfa/rfaReferenceTargets.cmake \
         lib/pkgconfig/rfa_reference.pc \
         lib/cmake/rfa/rfaConfig.cmake lib/cmake/rfa/rfaConfigVersion.cmake lib/pkgconfig/rfa.pc bin/rfa-run \
         bin/rfa-make-model share/rfa/models/spiral-filter/model.safetensors share/rfa/models/tiny-char-lm/config.json \
         share/rfa/python/pyproject.toml share/doc/rfa/README.md share/doc/rfa/docs/math.md share/doc/rfa/examples/c/hello_rfa.c; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
# Exactly the public headers, nothing from runtime/src.
diff <(cd "$src/runtime/include/rfa" && ls) <(cd "$prefix/include/rfa" && ls) || fail "installed headers differ from runtime/include/rfa"
[ ! -e "$prefix/share/rfa/models/train" ] || fail "the training scripts are not part of the zoo"
# The CPU twin is a library of its own: librfa has none of it, librfa_reference needs librfa.
if nm -DC "$prefix/lib/librfa.so" | drain_grep "reference_forward"; then fail "librfa.so exports the CPU twin"; fi
nm -DC --defined-only "$prefix/lib/librfa_reference.so" | drain_grep "rfa::reference_forward(" ||
  fail "librfa_reference.so does not export rfa::reference_forward"
readelf -d "$prefix/lib/librfa_reference.so" | drain_grep "NEEDED.*\[librfa\.so" || fail "librfa_reference.so does not need librfa.so"

step "installed rfa-run and rfa-make-model"
"$prefix/bin/rfa-run" --version | drain_grep "rfa-run" || fail "rfa-run --version"
"$prefix/bin/rfa-make-model" --out "$work/made" --arch signal --layers 1 --heads 2 --d-e 8 --d-in 2 > /dev/null
"$prefix/bin/rfa-run" --model "$work/made" --summary --json | drain_grep '"architecture":"signal"' || fail "rfa-run on a made model"
"$prefix/bin/rfa-run" --model "$work/made" --cpu-reference --json > "$work/cpu.json" || fail "rfa-run --cpu-reference"
grep -q 'cpu-reference' "$work/cpu.json" || fail "rfa-run --cpu-reference did not run the twin"

step "examples with find_package(rfa)"
cmake -S "$src/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/ex.log" 2>&1 ||
  { cat "$work/ex.log"; fail "configuring the examples"; }
grep -q "the model zoo: $prefix/share/rfa/models" "$work/ex.log" || fail "rfa_MODELS_DIR does not point into the prefix"
grep -q "the CPU twin (reference): TRUE" "$work/ex.log" || fail "find_package(rfa OPTIONAL_COMPONENTS reference) did not find it"
cmake --build "$work/ex" -j2 >> "$work/ex.log" 2>&1 || { tail -40 "$work/ex.log"; fail "building the examples"; }
uses_prefix_lib "$work/ex/hello_rfa_cpp" || fail "hello_rfa_cpp does not use the installed librfa.so"
for s in hello_rfa_cpp_static hello_rfa_c_static; do
  if ldd "$work/ex/$s" | drain_grep librfa; then fail "$s links librfa.so"; fi
done
models=$prefix/share/rfa/models
"$work/ex/hello_rfa_cpp" "$models/spiral-filter"
"$work/ex/hello_rfa_cpp" "$models/tiny-char-lm" | drain_grep "^text: The " || fail "hello_rfa_cpp on the LM"
"$work/ex/hello_rfa_cpp_static" "$models/spiral-filter" > /dev/null
"$work/ex/hello_rfa_c_static" "$models/tiny-char-lm" > /dev/null
"$work/ex/hello_rfa_c" "$models/tiny-char-lm"
"$work/ex/hello_rfa_c" "$models/spiral-filter" > /dev/null
"$work/ex/check_with_twin" "$models/spiral-filter" || fail "check_with_twin (rfa::reference)"
"$work/ex/check_with_twin" "$models/tiny-char-lm" > /dev/null || fail "check_with_twin on the LM"
"$work/ex/check_with_twin_static" "$models/spiral-filter" > /dev/null || fail "check_with_twin_static (rfa::reference_static)"
if ldd "$work/ex/check_with_twin_static" | drain_grep librfa; then fail "check_with_twin_static links a shared librfa"; fi
ldd "$work/ex/check_with_twin" | drain_grep "librfa_reference\.so" || fail "check_with_twin does not use librfa_reference.so"
uses_prefix_lib "$work/ex/check_with_twin" || fail "check_with_twin does not use the installed librfa.so"
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
if "$work/ex/hello_rfa_c" "$work/no-such-model" 2> "$work/err.txt"; then fail "hello_rfa_c accepted a missing model"; fi
grep -q "no-such-model" "$work/err.txt" || fail "the C example's error does not name the folder"

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
uses_prefix_lib "$work/pc_c" || fail "pc_c does not use the installed librfa.so"
# The twin through pkg-config rfa_reference (it requires rfa).
# shellcheck disable=SC2046
c++ -std=c++20 "$src/examples/reference/check_with_twin.cpp" $(pkg-config --cflags --libs rfa_reference) \
  -Wl,-rpath,"$libdir" -o "$work/pc_twin"
"$work/pc_twin" "$models/spiral-filter" > /dev/null || fail "pc_twin (pkg-config rfa_reference)"
"$work/pc_cpp" "$models/tiny-char-lm" > /dev/null
"$work/pc_c" "$models/spiral-filter" > /dev/null

step "Python: pip install --no-build-isolation into a venv of Debian's python3, library from the prefix"
py=${RFA_PYTHON:-/usr/bin/python3}
"$py" -m venv --system-site-packages "$work/venv" > "$work/venv.log" 2>&1 || { cat "$work/venv.log"; fail "venv"; }
[ -f "$prefix/share/rfa/python/rfa/_install.py" ] || fail "cmake --install did not record the prefix for Python"
# As docs/python.md says: pip install straight from the prefix.
"$work/venv/bin/python" -m pip install --no-build-isolation --no-index "$prefix/share/rfa/python" > "$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; fail "pip install"; }
# No RFA_* variable at all, from a directory that has nothing to do with the prefix or the sources.
mkdir -p "$work/elsewhere"
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
