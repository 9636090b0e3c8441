# Detects an optional CUDA toolkit with cuDNN, cuBLAS and NCCL. Sets TENSOROPT_HAVE_CUDA.
# When found, CUDA code is compiled and linked even on machines without a GPU, so a CUDA build
# break shows up in CI; at run time the code reports "no GPU" instead of failing.
set(TENSOROPT_HAVE_CUDA OFF)
if(TENSOROPT_CUDA AND NOT TENSOROPT_FUZZ)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
    if(CUDAToolkit_FOUND AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      # Hopper (H100/H200) machine code plus its PTX, which the driver compiles for newer GPUs.
      # Set before enable_language: afterwards CMake has cached the compiler's own default
      # (sm_75 for CUDA 13), which no H100 kernel should be built for. Override with
      # -DCMAKE_CUDA_ARCHITECTURES=...
      if(NOT DEFINED CACHE{CMAKE_CUDA_ARCHITECTURES})
        set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "GPU architectures of the CUDA module (90: sm_90 and compute_90 PTX)")
      endif()
      enable_language(CUDA)
      set(CMAKE_CUDA_STANDARD 17)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      set(TENSOROPT_HAVE_CUDA ON)
      message(STATUS "tensoropt: CUDA ${CUDAToolkit_VERSION} with cuDNN and NCCL found; building CUDA support")
    else()
      message(STATUS "tensoropt: CUDA compiler found but cuDNN or NCCL missing; building CPU-only")
    endif()
  else()
    message(STATUS "tensoropt: no CUDA toolkit; building CPU-only")
  endif()
else()
  message(STATUS "tensoropt: CUDA disabled; building CPU-only")
endif()
