# The zoo's kernels as one object library, zoo_kernels, for the zoo program (bench/zoo) and its
# test (tests/zoo): included from both, defined once. Every bench/zoo/*.cpp except zoo_main.cpp
# is an entry (or the registry), part B's kernels_b_*.cpp included. An object library because
# each entry registers itself from a static initializer that nothing refers to by name, which a
# static archive would drop at link time.
include_guard(GLOBAL)

file(GLOB _zoo_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(FILTER _zoo_sources EXCLUDE REGEX "/zoo_main\\.cpp$")
add_library(zoo_kernels OBJECT ${_zoo_sources})
# In-tree the library's target is `tritium`; a project outside (find_package) has
# tritium::tritium, and fmt of its own (the installed libtritium keeps its fmt private).
if(TARGET tritium)
  target_link_libraries(zoo_kernels PUBLIC tritium fmt::fmt)
else()
  target_link_libraries(zoo_kernels PUBLIC tritium::tritium fmt::fmt)
endif()
target_include_directories(zoo_kernels PUBLIC ${CMAKE_CURRENT_LIST_DIR})
