#!/usr/bin/env bash
# One markdown report of the attention kernels on a GPU machine: rfa-bench attention (prefill at
# N = 1k..65k on fp32 caches, fp16 caches and cooperative matrices where the device has them; decode
# at context 512, 4k, 32k) beside PyTorch's SDPA on the same shapes, the kernels' statistics
# (rfa-bench attention --stats) and the tests that take the GPU's own paths. The work is
# tools/rfa-bench/gpu_report.py; this finds the binaries.
#
#   bash scripts/gpu-report.sh [--quick] [--no-tests] [--no-torch] [--tests-only] [--out DIR]
#        [--prefill-n 1024,4096] [--decode-n 512,4096] [--heads 8] [--dim 32]
#
# rfa-bench is looked for in $RFA_BUILD (set by .device/setup.sh), then build/, then .device/build/.
# On a GPU machine without a Vulkan SDK or compiler: build here, pack with
# the project's device tooling into .device/ (its setup.sh sets $RFA_BUILD), and run there as
#   . .device/setup.sh; bash scripts/gpu-report.sh
# --quick: lavapipe-sized shapes and one test case, labelled as such (the CTest check of this script).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=""
for d in "${RFA_BUILD:-}" "$root/build" "$root/.device/build"; do
  if [ -n "$d" ] && [ -x "$d/rfa-bench" ]; then build=$d; break; fi
done
if [ -z "$build" ]; then
  echo "gpu-report: no rfa-bench in \$RFA_BUILD, build/ or .device/build/: build it first (bash scripts/build.sh)," \
       "or on a machine without a compiler source .device/setup.sh from a packed tree" >&2
  exit 2
fi
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "gpu-report: python3 is needed for the report" >&2; exit 2; }
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
exec "$py" "$root/tools/rfa-bench/gpu_report.py" --bench "$build/rfa-bench" --tests "$build/tests" "$@"
