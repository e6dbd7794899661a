# The optional CUDA backend. SYNCOPATE_CUDA=AUTO builds it when nvcc, the CUDA toolkit and cuDNN are
# found (the toolkit's default home, /usr/local/cuda, is searched even when nvcc is not on PATH);
# ON insists and fails the configure naming what is missing; OFF never looks. Sets
# SYNCOPATE_WITH_CUDA and, when ON, the CUDNN_LIBRARY / CUDNN_INCLUDE_DIR it found.
set(SYNCOPATE_WITH_CUDA OFF)
set_property(CACHE SYNCOPATE_CUDA PROPERTY STRINGS AUTO ON OFF)
if(NOT SYNCOPATE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "SYNCOPATE_CUDA must be AUTO, ON or OFF, not '${SYNCOPATE_CUDA}'")
endif()

if(NOT SYNCOPATE_CUDA STREQUAL "OFF")
  set(_cuda_missing "")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # "native" fails where no GPU is present; Ampere (A100) and Hopper (H100/H200) by default.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    if(CCACHE_PROGRAM)
      set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
    endif()
    find_package(CUDAToolkit)
    # cuDNN ships no CMake package: look beside the toolkit.
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NOT CUDAToolkit_FOUND)
      list(APPEND _cuda_missing "the CUDA toolkit")
    endif()
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      list(APPEND _cuda_missing "cuDNN (cudnn.h and libcudnn)")
    endif()
  else()
    list(APPEND _cuda_missing "nvcc")
  endif()

  if(_cuda_missing)
    string(JOIN ", " _cuda_missing_text ${_cuda_missing})
    if(SYNCOPATE_CUDA STREQUAL "ON")
      message(FATAL_ERROR "SYNCOPATE_CUDA=ON but ${_cuda_missing_text} not found")
    endif()
    message(STATUS "CUDA backend: off (${_cuda_missing_text} not found)")
  else()
    set(SYNCOPATE_WITH_CUDA ON)
    message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${CUDNN_LIBRARY})")
  endif()
endif()
