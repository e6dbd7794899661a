# The checking build: sanitizers, Clang's thread-safety analysis and libFuzzer (docs/security.md,
# "Fuzzing and sanitizers"). scripts/test-sanitized.sh configures it; the regular build is unchanged.

if(SYNCOPATE_SANITIZE)
  # Every finding fails: UBSan would otherwise report and go on.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${SYNCOPATE_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${SYNCOPATE_SANITIZE})
endif()

if(SYNCOPATE_THREAD_SAFETY OR SYNCOPATE_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SYNCOPATE_THREAD_SAFETY and SYNCOPATE_BUILD_FUZZERS need Clang "
                        "(-DCMAKE_CXX_COMPILER=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
endif()

if(SYNCOPATE_BUILD_FUZZERS AND NOT SYNCOPATE_SANITIZE)
  message(FATAL_ERROR "SYNCOPATE_BUILD_FUZZERS needs SYNCOPATE_SANITIZE (e.g. address,undefined): "
                      "a fuzz target finds little without them")
endif()

if(SYNCOPATE_THREAD_SAFETY)
  # Abseil's annotations expand to Clang's attributes; a lock the analysis cannot see is an error.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety>
                      $<$<COMPILE_LANGUAGE:CXX>:-Werror=thread-safety>)
endif()

if(SYNCOPATE_BUILD_FUZZERS)
  # Coverage for libFuzzer in every library a target links, not only in the target itself.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()
