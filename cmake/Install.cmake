# `cmake --install build --prefix P` lays out an SDK under P:
#   lib/librfa.a, lib/librfa.so*          the library, static and shared
#   lib/librfa_reference.a, .so*          the CPU twin, a library of its own on top of librfa
#   include/rfa/*                         the public headers (nothing of runtime/src)
#   include/vulkan/*.h, vk_video/*.h      the Vulkan headers they include (Windows packages only)
#   lib/cmake/rfa/rfaConfig*.cmake        find_package(rfa): rfa::rfa (shared), rfa::rfa_static;
#                                         component `reference`: rfa::reference, rfa::reference_static
#   lib/pkgconfig/rfa.pc, rfa_reference.pc   pkg-config rfa, rfa_reference (relocatable)
#   bin/rfa-run, rfa-make-model, rfa-bench, rfa-viewer   the programs that were built
#   share/rfa/models/<model>/             the model zoo (rfa-run's default model is found there)
#   share/rfa/python/                     the Python package's source (pip install it from there)
#   share/doc/rfa/                        README, docs/ and the examples
include(CMakePackageConfigHelpers)

set_target_properties(rfa PROPERTIES EXPORT_NAME rfa_static)
set_target_properties(rfa_shared PROPERTIES EXPORT_NAME rfa)
install(TARGETS rfa rfa_shared EXPORT rfaTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/runtime/include/rfa DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The public headers include <vulkan/vulkan.h>. A Linux system has it (Debian: libvulkan-dev); a
# Windows package carries the Khronos headers it was built with (C headers only, Apache-2.0 / MIT),
# since a MinGW user may have no Vulkan SDK. An MSVC user's Vulkan SDK comes first on the path.
option(RFA_INSTALL_VULKAN_HEADERS "Install the Vulkan headers under include/ (default: Windows)" ${WIN32})
if(RFA_INSTALL_VULKAN_HEADERS)
  foreach(dir vulkan vk_video)
    if(EXISTS ${RFA_VULKAN_INCLUDE_DIR}/${dir})
      install(DIRECTORY ${RFA_VULKAN_INCLUDE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
    endif()
  endforeach()
endif()

# The CPU twin: an export set of its own (rfaReferenceTargets.cmake), so that the `reference`
# component is optional: rfaConfig.cmake includes it where it is installed.
set_target_properties(rfa_reference PROPERTIES EXPORT_NAME reference_static)
set_target_properties(rfa_reference_shared PROPERTIES EXPORT_NAME reference)
install(TARGETS rfa_reference rfa_reference_shared EXPORT rfaReferenceTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(RFA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rfa)
install(EXPORT rfaTargets NAMESPACE rfa:: DESTINATION ${RFA_CMAKE_DIR})
install(EXPORT rfaReferenceTargets NAMESPACE rfa:: DESTINATION ${RFA_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/rfaConfig.cmake.in
  ${CMAKE_BINARY_DIR}/rfaConfig.cmake INSTALL_DESTINATION ${RFA_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/rfaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/rfaConfig.cmake ${CMAKE_BINARY_DIR}/rfaConfigVersion.cmake
  DESTINATION ${RFA_CMAKE_DIR})

configure_file(${CMAKE_SOURCE_DIR}/cmake/rfa.pc.in ${CMAKE_BINARY_DIR}/rfa.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/rfa_reference.pc.in ${CMAKE_BINARY_DIR}/rfa_reference.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/rfa.pc ${CMAKE_BINARY_DIR}/rfa_reference.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

foreach(program rfa-run rfa-make-model rfa-bench rfa-viewer)
  if(TARGET ${program})
    install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

set(RFA_DATA_DIR ${CMAKE_INSTALL_DATADIR}/rfa)
file(GLOB RFA_ZOO LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/models/*)
foreach(model ${RFA_ZOO})
  if(IS_DIRECTORY ${model} AND EXISTS ${model}/config.json)
    install(DIRECTORY ${model} DESTINATION ${RFA_DATA_DIR}/models PATTERN "*.log" EXCLUDE)
  endif()
endforeach()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/ DESTINATION ${RFA_DATA_DIR}/python
  PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE PATTERN "*.egg-info" EXCLUDE PATTERN "build" EXCLUDE)

set(RFA_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/rfa)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${RFA_DOC_DIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${RFA_DOC_DIR}/docs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${RFA_DOC_DIR}/examples)

# The Python package records this install's prefix (share/rfa/python/rfa/_install.py), so a
# `pip install` of share/rfa/python finds lib/ of the prefix with no RFA_* variable.
install(CODE "set(RFA_PY_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
set(RFA_PY_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(RFA_PY_DATADIR \"${RFA_DATA_DIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/PythonInstallPaths.cmake)
