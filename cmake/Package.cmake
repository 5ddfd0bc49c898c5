# `cpack` in a build folder packs what `cmake --install` lays out (cmake/Install.cmake) into
# build/package/:
#   rfa-vk-<version>-windows-x86_64.zip          a Windows (MinGW-w64 cross) build: bin/ with the
#                                                 programs and DLLs, include/, lib/, share/
#   rfa-vk-<version>-linux-<cpu>.tar.gz           a Linux build, the same tree
#   rfa-vk_<version>_<arch>.deb                   the same under /usr (Linux; Debian's dependencies)
# Each archive unpacks into one folder, which is a relocatable prefix: find_package(rfa) with
# CMAKE_PREFIX_PATH=<folder>, pkg-config with PKG_CONFIG_PATH=<folder>/lib/pkgconfig, and the
# programs find the zoo beside themselves. tests/install_test.sh unpacks and tests them.
set(CPACK_PACKAGE_NAME rfa-vk)
set(CPACK_PACKAGE_VENDOR "RFA-VK")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Robust Filter Attention on any Vulkan GPU: the runtime (C, C++, Python), its programs, the viewer and the model zoo")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" rfa_cpu)
if(WIN32)
  set(CPACK_GENERATOR ZIP)
  set(CPACK_PACKAGE_FILE_NAME rfa-vk-${PROJECT_VERSION}-windows-${rfa_cpu})
else()
  set(CPACK_GENERATOR TGZ DEB)
  set(CPACK_PACKAGE_FILE_NAME rfa-vk-${PROJECT_VERSION}-linux-${rfa_cpu})
endif()
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
# cpack packs what the build made, as `cmake --install` does: its install step must not first build
# every target (the tests included; scripts/test-windows.sh ci builds only what it runs).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The .deb: installed under /usr; what the library, the programs and the viewer load at run time.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)  # else CPack asks the host's dpkg
endif()
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "RFA-VK")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libvulkan1, mesa-vulkan-drivers | vulkan-icd")
if(TARGET rfa-viewer)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libglfw3, libstb0")
endif()
# The public headers include Vulkan's; python3-numpy for the Python package.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libvulkan-dev, python3-numpy")

# An archive may be unpacked anywhere: the prefix cmake/PythonInstallPaths.cmake recorded (CPack's
# staging folder) means nothing there, so the archives carry no _install.py (docs/python.md: from
# an unpacked archive, RFA_PREFIX names it). The .deb keeps its /usr.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/PackageRelocatable.cmake)

include(CPack)
