#!/usr/bin/env bash
# Headless screenshots of rfa-viewer on every model of the zoo (docs/viewer.md, "Screenshots"): one
# command to refresh docs/viewer-<model>.png, e.g. after a model is retrained.
#
#   bash scripts/viewer-screenshots.sh                    # docs/viewer-<model>.png at 1600 x 1000
#   bash scripts/viewer-screenshots.sh --out DIR --size 1440x900 --json [--models DIR] [MODEL ...]
#
# --json also writes each run's --dump-json (panels, tables, the selected row, the tomography) next
# to its picture: tests/viewer_zoo_check.cpp runs this script that way and checks them. Needs a
# build (bash scripts/build.sh); RFA_VIEWER names another rfa-viewer (an installed one, or a
# command that runs rfa-viewer.exe under Wine), --models another zoo (an installed share/rfa/models).
# No display is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

out=docs
size=1600x1000
json=0
zoo=models
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --json) json=1; shift ;;
    --models) zoo=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "viewer-screenshots: unknown option $1" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(spiral-filter spiral-afa spiral-afa-full spiral-rt tiny-char-lm)
case "$size" in
  *x*) width=${size%x*}; height=${size#*x} ;;
  *) echo "viewer-screenshots: --size expects WIDTHxHEIGHT, got $size" >&2; exit 2 ;;
esac
viewer=${RFA_VIEWER:-build/viewer/rfa-viewer}
if [ ! -x "$viewer" ]; then
  echo "viewer-screenshots: no $viewer (build first: bash scripts/build.sh)" >&2
  exit 2
fi
mkdir -p "$out"
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR=$(mktemp -d)
  trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
fi

for m in "${models[@]}"; do
  if [ ! -f "$zoo/$m/config.json" ]; then
    echo "viewer-screenshots: no model $zoo/$m" >&2
    exit 2
  fi
  # What each picture shows: a signal model streamed 120 positions one per frame (past its
  # window's ring where it has one); the text model's prompt and the greedy text after it, with
  # the mouse on a cell of the map (its readout and the two tokens highlighted in the text).
  if [ "$m" = tiny-char-lm ]; then
    run=(--prompt "The quick brown fox jumps over the lazy dog. " --steps 60 --hover 33,10)
  else
    run=(--steps 120)
  fi
  dump=()
  [ "$json" = 1 ] && dump=(--dump-json "$out/viewer-$m.json")
  "$viewer" --headless --model "$zoo/$m" "${run[@]}" --frames 3 --width "$width" --height "$height" \
    --screenshot "$out/viewer-$m.png" "${dump[@]}"
  echo "$out/viewer-$m.png"
done
