# Compiler warnings for every target of the project, in each compiler's own spelling, so that
# MSVC, g++ and clang all build the tree (the flags are never passed to a compiler that lacks them).
# RFA_WERROR makes them errors: CI builds the whole tree warning-free with g++ and with clang.
if(MSVC)
  add_compile_options(/W3 /permissive- /Zc:__cplusplus)
  if(RFA_WERROR)
    add_compile_options(/WX)
  endif()
elseif(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # g++ 12 reports `"literal" + std::string` inside libstdc++ as an overlapping memcpy at -O2
    # (GCC bug 105651, fixed in 13): a false positive that would fail -Werror builds.
    add_compile_options(-Wno-restrict)
  endif()
  if(RFA_WERROR)
    add_compile_options(-Werror)
  endif()
endif()
