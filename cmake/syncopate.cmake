# Small helpers in the style of Abseil's CMake: explicit sources, syncopate::name aliases, labelled tests.

# Warnings for C++ sources (nvcc takes its own flags, so CUDA sources are left out).
set(SYNCOPATE_WARNINGS $<$<COMPILE_LANGUAGE:CXX>:-Wall> $<$<COMPILE_LANGUAGE:CXX>:-Wextra>
    $<$<COMPILE_LANGUAGE:CXX>:-Wno-unused-parameter>)

# syncopate_cc_library(NAME foo SRCS a.cc HDRS a.h DEPS syncopate::bar)
# Creates target syncopate_foo with alias syncopate::foo. A library without SRCS is header-only.
function(syncopate_cc_library)
  cmake_parse_arguments(LIB "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  set(target syncopate_${LIB_NAME})
  if(LIB_SRCS)
    add_library(${target} STATIC ${LIB_SRCS} ${LIB_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/services)
    target_link_libraries(${target} PUBLIC ${LIB_DEPS})
    target_compile_options(${target} PRIVATE ${SYNCOPATE_WARNINGS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/services)
    target_link_libraries(${target} INTERFACE ${LIB_DEPS})
  endif()
  add_library(syncopate::${LIB_NAME} ALIAS ${target})
endfunction()

# syncopate_cc_binary(NAME syncopate-store SRCS main.cc DEPS ...)
function(syncopate_cc_binary)
  cmake_parse_arguments(BIN "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${BIN_NAME} ${BIN_SRCS})
  target_link_libraries(${BIN_NAME} PRIVATE ${BIN_DEPS})
  target_compile_options(${BIN_NAME} PRIVATE ${SYNCOPATE_WARNINGS})
  set_target_properties(${BIN_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()

# syncopate_cc_test(NAME foo_test SRCS foo_test.cc DEPS ... LABELS unit [TIMEOUT s])
# Every test carries at least one CTest label (unit, integration, e2e, gpu) so a machine can select.
function(syncopate_cc_test)
  if(NOT SYNCOPATE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT T_LABELS)
    message(FATAL_ERROR "syncopate_cc_test(${T_NAME}) needs LABELS")
  endif()
  add_executable(${T_NAME} ${T_SRCS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_options(${T_NAME} PRIVATE ${SYNCOPATE_WARNINGS})
  target_compile_definitions(${T_NAME} PRIVATE
    SYNCOPATE_BIN_DIR="${PROJECT_BINARY_DIR}/bin")
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()
