# Fails when PROGRAM needs libtritium or LLVM at run time: what an ahead-of-time launcher must
# not (cmake -DPROGRAM=<file> -P check_no_libtritium.cmake).
file(GET_RUNTIME_DEPENDENCIES EXECUTABLES ${PROGRAM}
  RESOLVED_DEPENDENCIES_VAR _resolved UNRESOLVED_DEPENDENCIES_VAR _unresolved)
foreach(lib ${_resolved} ${_unresolved})
  if(lib MATCHES "libtritium|libLLVM|libfmt")
    message(FATAL_ERROR "${PROGRAM} needs ${lib} at run time")
  endif()
endforeach()
list(JOIN _resolved "\n  " _list)
message(STATUS "${PROGRAM} needs only:\n  ${_list}")
