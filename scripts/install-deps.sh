#!/usr/bin/env bash
# Installs the Debian 12 packages RFA-VK needs to build, test and run (only those missing).
#   bash scripts/install-deps.sh          # the Linux build, its tests, the viewer, the Python package
#   bash scripts/install-deps.sh arm64    # also the arm64 cross toolchain, qemu-user and Debian's arm64
#                                         # Vulkan loader, lavapipe and validation layer (multiarch)
set -euo pipefail
PKGS=(cmake g++ make pkg-config libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslang-tools
      spirv-tools doctest-dev nlohmann-json3-dev libglfw3-dev libimgui-dev libstb-dev xvfb xauth clang
      # the Python package (python/): its suite, and the pip install of tests/install_test.sh
      python3 python3-numpy python3-pytest python3-setuptools python3-pip python3-venv)
if [ "${1:-}" = "arm64" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  PKGS+=(g++-aarch64-linux-gnu qemu-user-static file libc6:arm64 libstdc++6:arm64 libvulkan1:arm64
         mesa-vulkan-drivers:arm64 vulkan-validationlayers:arm64)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
