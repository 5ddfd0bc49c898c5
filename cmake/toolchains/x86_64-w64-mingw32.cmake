# Windows x86-64 from Linux with MinGW-w64 (Debian: g++-mingw-w64-x86-64-posix; the posix thread
# model, which std::thread and std::mutex need). Used by scripts/test-windows.sh:
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/x86_64-w64-mingw32.cmake
# The GCC runtime (libgcc, libstdc++, winpthread) is linked statically, so rfa.dll and the programs
# need no MinGW DLL beside them; only Windows' own DLLs and, at run time, vulkan-1.dll.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(RFA_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${RFA_MINGW_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${RFA_MINGW_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${RFA_MINGW_TRIPLE}-windres)

# Libraries and headers of the target from the MinGW sysroot only, and from the Windows prefixes
# given as -DCMAKE_FIND_ROOT_PATH=DIR (the viewer's GLFW and ImGui, scripts/test-windows.sh; an
# unpacked rfa-vk zip, for an app's find_package(rfa)); programs (glslangValidator, spirv-val,
# python3: build-time tools) from the host.
list(APPEND CMAKE_FIND_ROOT_PATH /usr/${RFA_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")
