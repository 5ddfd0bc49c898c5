#!/usr/bin/env bash
# GPU-assisted validation: the Khronos layer instruments every shader and reports any out-of-bounds
# buffer access. Too slow for CI on lavapipe (~15 min); run by hand after kernel changes, on an
# existing build (bash scripts/build.sh). GPU-AV tracks pooled descriptor sets only, hence
# RFA_NO_PUSH_DESCRIPTORS=1.
set -euo pipefail
cd "$(dirname "$0")/../build"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}" RFA_VALIDATION=1 RFA_NO_PUSH_DESCRIPTORS=1 \
  VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT RFA_SOURCE_DIR="$(cd .. && pwd)"
for t in test_gpu_ops test_session test_rfa_attention test_goldens; do
  echo "== $t"
  ./tests/$t
done
