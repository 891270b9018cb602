# CTest driver of the consumer project (tests/CMakeLists.txt registers it):
#   cmake -DMODE=package|subdirectory|fetchcontent -DSOURCE=<tritium source> -DBUILD=<tritium
#         build> -DWORK=<scratch dir> -DCXX=<compiler> -P run.cmake
# package: cmake --install the build into WORK/prefix, build the consumer against it, run both
# programs. subdirectory / fetchcontent: configure the consumer on the source tree and check
# that its build plan (ninja -n) holds together; building libtritium a second time would take
# most of CI's time (docs/using.md records a full build of each).
foreach(v MODE SOURCE BUILD WORK CXX)
  if(NOT ${v})
    message(FATAL_ERROR "run.cmake: -D${v}= is required")
  endif()
endforeach()
set(_consumer ${CMAKE_CURRENT_LIST_DIR})
file(REMOVE_RECURSE ${WORK})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(_configure ${CMAKE_COMMAND} -S ${_consumer} -B ${WORK}/build -G Ninja
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
# A sanitizer build of tritium (tools/sanitize.sh) installs a library that needs the
# sanitizer's runtime: the consumer links it as a user of such a build would.
if(SANITIZE)
  list(APPEND _configure "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
if(MODE STREQUAL "package")
  run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
  run(${_configure} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK}/build)
  run(${WORK}/build/consumer)
  if(NOT last_output MATCHES "consumer \\(tritium .* device\\): ok")
    message(FATAL_ERROR "consumer did not report ok")
  endif()
  run(${WORK}/build/consumer_aot)
  if(NOT last_output MATCHES "consumer_aot on .*: ok")
    message(FATAL_ERROR "consumer_aot did not report ok")
  endif()
elseif(MODE STREQUAL "subdirectory")
  run(${_configure} -DTRITIUM_CONSUME=subdirectory -DTRITIUM_SOURCE_DIR=${SOURCE})
  run(${CMAKE_COMMAND} --build ${WORK}/build -- -n)
elseif(MODE STREQUAL "fetchcontent")
  run(${_configure} -DTRITIUM_CONSUME=fetchcontent -DFETCHCONTENT_SOURCE_DIR_TRITIUM=${SOURCE})
  run(${CMAKE_COMMAND} --build ${WORK}/build -- -n)
else()
  message(FATAL_ERROR "MODE=${MODE}")
endif()
message(STATUS "consumer (${MODE}): ok")
