#!/usr/bin/env bash
# CMAKE_CROSSCOMPILING_EMULATOR of the Windows build (scripts/test-windows.sh): runs one .exe under
# Wine and passes its exit code through. Wine's own chatter (fixme:/err: lines) stays on stderr.
set -u
export WINEDEBUG=${WINEDEBUG:--all}
exec wine "$@"
