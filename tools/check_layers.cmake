# The layering rules the include paths cannot enforce alone (a relative "../../runtime/x.hpp"
# escapes them): run as the CTest test `layers`, `cmake -DROOT=<source dir> -P` this file.
#
#   dsl/        includes nothing from codegen/ or runtime/, and no LLVM
#   codegen/    includes nothing from runtime/
#   runtime/    includes no LLVM (LLVM is codegen's business)
#   inside codegen/: gpu_ir/ (layouts, matrix units, the architecture model, axis info) includes
#   nothing of passes/, gpu/ or targets/, and no LLVM; passes/ includes nothing of gpu/ or
#   targets/ and no LLVM. The GPU lowering (gpu/) and the targets sit above both.
#   public headers (dsl/include, runtime/include) include no LLVM, no vendor header, and no
#   internal header
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<tritium source dir> -P check_layers.cmake")
endif()

set(_violations "")
function(check_folder folder forbidden why)
  file(GLOB_RECURSE _files ${ROOT}/${folder}/*.cpp ${ROOT}/${folder}/*.hpp ${ROOT}/${folder}/*.h
       ${ROOT}/${folder}/*.def)
  foreach(f ${_files})
    file(STRINGS ${f} _lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line ${_lines})
      if(line MATCHES "${forbidden}")
        file(RELATIVE_PATH _rel ${ROOT} ${f})
        set(_violations "${_violations}\n  ${_rel}: ${line}   (${why})")
      endif()
    endforeach()
  endforeach()
  set(_violations "${_violations}" PARENT_SCOPE)
endfunction()

set(_llvm "[<\"](llvm|llvm-c|lld)/")
set(_vendor "[<\"](cuda\\.h|cuda_runtime|hip/)")
check_folder(dsl "tritium/runtime/|tritium/tritium\\.hpp|codegen/|runtime/|${_llvm}"
             "dsl is the bottom layer")
check_folder(codegen "tritium/runtime/|tritium/tritium\\.hpp|runtime/"
             "codegen must not use the runtime")
check_folder(runtime "${_llvm}" "the runtime holds no LLVM; ask codegen")
check_folder(codegen/gpu_ir "passes/|gpu/|targets/|${_llvm}"
             "gpu_ir is below the GPU passes and the lowering")
check_folder(codegen/passes "[<\"/]gpu/|targets/|${_llvm}"
             "the GPU passes sit below the lowering and the targets")
check_folder(dsl/include "${_vendor}|\"" "public headers include only public headers")
check_folder(runtime/include "${_vendor}|\"" "public headers include only public headers")

if(_violations)
  message(FATAL_ERROR "layering violations:${_violations}")
endif()
message(STATUS "layers: dsl <- codegen (gpu_ir <- passes <- gpu, targets) <- runtime, no violations")
