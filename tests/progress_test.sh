#!/usr/bin/env bash
# rfa-run's progress line on long work: shown on a terminal (script(1) provides one) once the delay
# has passed, cleared before the result is printed; never when stderr is not a terminal; not before
# the delay. RFA_PROGRESS_DELAY_MS sets the delay (1000 ms by default).
#   progress_test.sh RFA_RUN MODEL_DIR WORK_DIR
set -euo pipefail
run=$1 model=$2 work=$3
mkdir -p "$work"
fail() { echo "progress_test: FAIL: $*" >&2; exit 1; }
cmd="'$run' --model '$model' --prompt 'The ' --generate 40"

RFA_PROGRESS_DELAY_MS=0 script -qec "$cmd" /dev/null > "$work/tty.txt" || fail "rfa-run failed on a terminal"
grep -aq "rfa-run: generating [0-9]*/40 tokens" "$work/tty.txt" || fail "no progress line on a terminal: $(cat -v "$work/tty.txt")"
# The result follows a cleared line: the last progress line ends with ESC[K, then the text.
last=$(tr '\r' '\n' < "$work/tty.txt" | grep -a "^.\[KThe " || true)
[ -n "$last" ] || fail "the result is not printed on a cleared line: $(cat -v "$work/tty.txt")"

RFA_PROGRESS_DELAY_MS=0 bash -c "$cmd" > "$work/out.txt" 2> "$work/err.txt" || fail "rfa-run failed without a terminal"
if grep -aq "generating\|prefill of" "$work/err.txt"; then fail "a progress line on a stderr that is not a terminal"; fi
grep -aq "^The " "$work/out.txt" || fail "no text on stdout"

RFA_PROGRESS_DELAY_MS=600000 script -qec "$cmd" /dev/null > "$work/tty2.txt" || fail "rfa-run failed on a terminal"
if grep -aq "generating\|prefill of" "$work/tty2.txt"; then fail "a progress line before the delay passed"; fi
echo "progress_test: all passed"
