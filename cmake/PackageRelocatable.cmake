# CPack's pre-build script (cmake/Package.cmake): an archive (ZIP, TGZ) is a relocatable prefix, so
# the prefix cmake/PythonInstallPaths.cmake recorded in share/rfa/python/rfa/_install.py (CPack's
# own staging folder) would send a pip-installed package to a folder that exists only here. The
# archive drops the file; the Python package then finds the library from RFA_PREFIX, or from
# share/rfa/python when imported there (python/rfa/_lib.py). The .deb keeps its /usr.
message(STATUS "rfa pre-build: generator=${CPACK_GENERATOR} tmp=${CPACK_TEMPORARY_INSTALL_DIRECTORY} top=${CPACK_TOPLEVEL_DIRECTORY}")
if(NOT CPACK_GENERATOR MATCHES "^(ZIP|TGZ|TXZ|TBZ2|TZST|7Z)$")
  return()
endif()
file(GLOB_RECURSE recorded "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/rfa/python/rfa/_install.py"
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/share/rfa/python/rfa/_install.py")
if(NOT recorded)
  message(FATAL_ERROR "rfa: no share/rfa/python/rfa/_install.py under ${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
endif()
file(REMOVE ${recorded})
