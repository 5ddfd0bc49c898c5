#!/usr/bin/env bash
# Installs the Debian 12 packages RFA-VK needs to build, test and run (only those missing).
#   bash scripts/install-deps.sh           the Linux build, its tests, the viewer, the Python package
#   bash scripts/install-deps.sh windows   also the Windows cross build and Wine to test it (scripts/test-windows.sh),
#                                          and the sources of Debian's glfw3 and imgui for its viewer
#                                          (scripts/fetch-viewer-sources.sh: apt-get source, set-up time only)
#   bash scripts/install-deps.sh arm64     also the arm64 cross toolchain, qemu-user and Debian's arm64 Vulkan
#                                          loader, lavapipe and validation layer (multiarch; scripts/test-arm64.sh)
#   bash scripts/install-deps.sh mesa26    also Mesa 26's lavapipe, glslang 15 and the tools beside them, from
#                                          Debian 13, unpacked into .drivers/mesa26 (scripts/newer-driver.sh;
#                                          nothing installed over the system's)
set -euo pipefail
# `cmd | grep -q` under pipefail is flaky: grep quits at the first match, cmd's next write gets
# SIGPIPE and the pipeline fails although it matched. This grep reads its input to the end.
drain_grep() { grep "$@" > /dev/null; }
PKGS=(cmake g++ make pkg-config libvulkan-dev libvulkan-volk-dev mesa-vulkan-drivers vulkan-validationlayers glslang-tools
      spirv-tools doctest-dev nlohmann-json3-dev libglfw3-dev libimgui-dev libstb-dev xvfb xauth clang libclang-rt-14-dev
      # the Python package (python/): its suite, and the pip install of tests/install_test.sh
      python3 python3-numpy python3-pytest python3-setuptools python3-pip python3-venv)
SUDO=""
NEWER_DRIVER=""
viewer_sources=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
for arg in "$@"; do
  case "$arg" in
    # MinGW-w64 with the posix thread model; Wine 8 (wine64: the 64-bit loader) with its winevulkan
    # on top of the host's lavapipe; Xvfb, since Wine's Vulkan needs an X display; dpkg-dev's
    # dpkg-source unpacks the viewer's GLFW and ImGui sources.
    windows) PKGS+=(g++-mingw-w64-x86-64-posix wine wine64 xvfb xauth dpkg-dev); viewer_sources=1 ;;
    # The cross compiler, qemu-user to run its programs, and the arm64 Vulkan stack they load.
    arm64)
      if ! dpkg --print-foreign-architectures | drain_grep -x arm64; then
        $SUDO dpkg --add-architecture arm64
        $SUDO apt-get update -qq
      fi
      PKGS+=(g++-aarch64-linux-gnu qemu-user-static file libc6:arm64 libstdc++6:arm64 libvulkan1:arm64
             mesa-vulkan-drivers:arm64 vulkan-validationlayers:arm64) ;;
    mesa26) NEWER_DRIVER=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (known: windows, arm64, mesa26)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | drain_grep "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ -z "$viewer_sources" ] || bash "$(dirname "$0")/fetch-viewer-sources.sh"
[ -z "$NEWER_DRIVER" ] || bash "$(dirname "$0")/newer-driver.sh"
