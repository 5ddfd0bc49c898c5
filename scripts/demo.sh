#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
./build/rfa-run --list-devices
./build/rfa-run --self-check
./build/rfa-run   # the bundled spiral-filter model, streamed one measurement at a time
