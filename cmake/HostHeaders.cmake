# rfa_link_host_headers(DIR FROM ENTRY...): DIR/ENTRY becomes a link to FROM/ENTRY (a folder or a
# file) for each ENTRY that FROM has. A cross build (MinGW, arm64) sees the host's platform-neutral
# headers (Vulkan, volk, nlohmann-json, stb) through such a folder: /usr/include itself must not go
# on a cross compiler's include path, where glibc's headers would shadow the target's.
# Used by cmake/Vulkan.cmake, viewer/CMakeLists.txt and cmake/viewer-deps/.
function(rfa_link_host_headers dir from)
  file(MAKE_DIRECTORY ${dir})
  foreach(entry ${ARGN})
    if(EXISTS ${from}/${entry} AND NOT EXISTS ${dir}/${entry})
      file(CREATE_LINK ${from}/${entry} ${dir}/${entry} SYMBOLIC)
    endif()
  endforeach()
endfunction()
