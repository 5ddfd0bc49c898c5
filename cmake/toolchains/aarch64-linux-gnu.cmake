# Cross-compiles RFA-VK for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu.
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# Programs and tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so CTest runs the suite on an
# x86-64 machine; scripts/test-arm64.sh does both. Shaders are compiled by the host's glslangValidator
# (SPIR-V is the same on every architecture). Header-only dependencies (doctest, nlohmann-json, volk,
# the Vulkan headers) come from the host's /usr/include; libraries from /usr/aarch64-linux-gnu (the
# cross toolchain) and Debian's arm64 multiarch packages.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The cross sysroot first, then the multiarch arm64 libraries of the host (libvulkan1:arm64 ...).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_PATH /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # glslangValidator, spirv-val, python3: host tools
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)    # header-only packages live in the host's /usr/include
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)    # doctest's and nlohmann-json's CMake configs (arch-independent)

find_program(RFA_QEMU_AARCH64 qemu-aarch64-static)
if(RFA_QEMU_AARCH64)
  # -L: the dynamic loader and libc of the cross toolchain (also installed by libc6:arm64).
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RFA_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
