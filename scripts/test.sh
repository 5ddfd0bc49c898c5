#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test on lavapipe
# with the Khronos validation layer on (any validation message fails the test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
cd build
ctest --output-on-failure -j2 "$@"
