#!/usr/bin/env bash
# Configures and builds RFA-VK into ./build (Release). Extra arguments go to cmake's configure step.
# RFA_WERROR=ON (set by .ci/run) makes compiler warnings errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRFA_WERROR="${RFA_WERROR:-OFF}" "$@" > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j"$(nproc)" >> build.log 2>&1 || { tail -50 build.log; exit 1; }
