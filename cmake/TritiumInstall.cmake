# cmake --install <build> [--prefix P] lays out:
#   include/tritium/…                 the public headers (dsl/include, runtime/include)
#   lib/libtritium.so.*               the library (LLVM inside, hidden)
#   lib/libtritium_aot.a              the AOT launcher's runtime (vendor drivers only)
#   bin/tritium                       the command-line tool
#   lib/cmake/tritium/                tritiumConfig.cmake, its version file, the targets
#                                     (tritium::tritium, tritium::aot) and tritium_add_kernels
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TRITIUM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tritium)

set(_tritium_exported tritium)
if(TARGET tritium_aot)
  list(APPEND _tritium_exported tritium_aot)
endif()
install(TARGETS ${_tritium_exported} EXPORT tritiumTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dsl/include/ ${PROJECT_SOURCE_DIR}/runtime/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET tritium_cli)
  # The tool finds libtritium next door, wherever the prefix is moved.
  set_target_properties(tritium_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS tritium_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT tritiumTargets NAMESPACE tritium:: DESTINATION ${TRITIUM_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tritiumConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tritiumConfig.cmake
  INSTALL_DESTINATION ${TRITIUM_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tritiumConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tritiumConfig.cmake
              ${PROJECT_BINARY_DIR}/tritiumConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/TritiumKernels.cmake
        DESTINATION ${TRITIUM_INSTALL_CMAKEDIR})
