# Run by `cmake --install` (install(SCRIPT), after the Python package's sources were copied): writes
# share/rfa/python/rfa/_install.py with the prefix this install went to, so that a package
# pip-installed from there finds the library of this prefix with no variable set (python/rfa/_lib.py).
# RFA_PY_LIBDIR, RFA_PY_BINDIR and RFA_PY_DATADIR come from install(CODE) in Install.cmake; they and
# CMAKE_INSTALL_PREFIX are the values of this install (`--prefix P` included). DESTDIR stages the
# file without changing the prefix recorded.
foreach(v LIBDIR BINDIR)
  if(IS_ABSOLUTE "${RFA_PY_${v}}")
    set(_rfa_${v} "${RFA_PY_${v}}")
  else()
    set(_rfa_${v} "${CMAKE_INSTALL_PREFIX}/${RFA_PY_${v}}")
  endif()
endforeach()
set(_rfa_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(_rfa_text "# Written by `cmake --install`: the prefix this package's library was installed to.\n")
foreach(v PREFIX LIBDIR BINDIR)
  file(TO_CMAKE_PATH "${_rfa_${v}}" _p)
  string(REPLACE "\\" "\\\\" _p "${_p}")
  string(REPLACE "\"" "\\\"" _p "${_p}")
  string(APPEND _rfa_text "${v} = \"${_p}\"\n")
endforeach()
if(IS_ABSOLUTE "${RFA_PY_DATADIR}")
  set(_rfa_pkg "$ENV{DESTDIR}${RFA_PY_DATADIR}/python/rfa")
else()
  set(_rfa_pkg "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${RFA_PY_DATADIR}/python/rfa")
endif()
message(STATUS "Installing: ${_rfa_pkg}/_install.py")
file(WRITE "${_rfa_pkg}/_install.py" "${_rfa_text}")
