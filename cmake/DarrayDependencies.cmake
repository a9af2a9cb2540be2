# Required: MPI (C and C++ bindings) and Kokkos. Optional: CUDA + NCCL, FFTW, cuFFT, each switched by
# DARRAY_ENABLE_<X>=AUTO|ON|OFF and exposed as darray::<x> imported targets.
# MPI_<lang>_LIBRARY_VERSION_STRING (MPI_Get_library_version) tells the tests which MPI, hence which launcher, this is.
set(MPI_DETERMINE_LIBRARY_VERSION ON)
find_package(MPI REQUIRED COMPONENTS CXX)
include(DarrayFindKokkos)
set(DARRAY_KOKKOS_DEVICES "${Kokkos_DEVICES}")
include(GNUInstallDirs)

# Kokkos for builds without CMake (darray.pc, the include-only consumer test): its header directory, its core
# library and the compiler flags its backends need (-fopenmp for OpenMP). Trilinos' Kokkos (Debian's 3.4) sets
# Kokkos_INCLUDE_DIRS and Kokkos_LIBRARY_DIRS; a standalone Kokkos (4.x) sets neither and describes itself through
# its Kokkos::kokkoscore target instead. Without this, find_library went on to the system's default paths and
# darray.pc named Debian's Trilinos Kokkos library even in a build against another Kokkos.
set(DARRAY_KOKKOS_INCLUDE_DIRS ${Kokkos_INCLUDE_DIRS})
set(DARRAY_KOKKOS_CORE_LIBRARY "")
if(TARGET Kokkos::kokkoscore AND NOT Kokkos_LIBRARY_DIRS)
  if(NOT DARRAY_KOKKOS_INCLUDE_DIRS)
    get_target_property(DARRAY_KOKKOS_INCLUDE_DIRS Kokkos::kokkoscore INTERFACE_INCLUDE_DIRECTORIES)
  endif()
  get_target_property(_darray_kokkos_configs Kokkos::kokkoscore IMPORTED_CONFIGURATIONS)
  foreach(_config IN LISTS _darray_kokkos_configs)
    get_target_property(_darray_kokkos_location Kokkos::kokkoscore IMPORTED_LOCATION_${_config})
    if(_darray_kokkos_location AND NOT DARRAY_KOKKOS_CORE_LIBRARY)
      set(DARRAY_KOKKOS_CORE_LIBRARY ${_darray_kokkos_location})
    endif()
  endforeach()
else()
  find_library(DARRAY_KOKKOS_CORE_LIBRARY_FOUND NAMES kokkoscore trilinos_kokkoscore HINTS ${Kokkos_LIBRARY_DIRS}
               NO_DEFAULT_PATH)
  if(DARRAY_KOKKOS_CORE_LIBRARY_FOUND)
    set(DARRAY_KOKKOS_CORE_LIBRARY ${DARRAY_KOKKOS_CORE_LIBRARY_FOUND})
  endif()
endif()
set(DARRAY_KOKKOS_CXX_FLAGS "")
if("OPENMP" IN_LIST Kokkos_DEVICES)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  separate_arguments(DARRAY_KOKKOS_CXX_FLAGS UNIX_COMMAND "${OpenMP_CXX_FLAGS}")
endif()

function(darray_optional name found info)
  if(DARRAY_ENABLE_${name} STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "DARRAY_ENABLE_${name}=ON but ${name} was not found: ${info}")
  endif()
endfunction()

# CUDA toolkit (runtime + NCCL + cuFFT) under /usr/local/cuda or CUDA_HOME / CUDAToolkit_ROOT.
set(DARRAY_HAS_NCCL OFF)
set(DARRAY_HAS_CUFFT OFF)
if(NOT DARRAY_ENABLE_NCCL STREQUAL "OFF" OR NOT DARRAY_ENABLE_CUFFT STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
endif()
if(NOT DARRAY_ENABLE_NCCL STREQUAL "OFF")
  find_path(DARRAY_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include PATH_SUFFIXES include)
  find_library(DARRAY_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib PATH_SUFFIXES lib64 lib)
  if(CUDAToolkit_FOUND AND DARRAY_NCCL_INCLUDE_DIR AND DARRAY_NCCL_LIBRARY)
    set(DARRAY_HAS_NCCL ON)
    set(DARRAY_NCCL_INFO "${DARRAY_NCCL_LIBRARY}")
    if(NOT TARGET darray::nccl)
      add_library(darray::nccl INTERFACE IMPORTED GLOBAL)
      set_target_properties(darray::nccl PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${DARRAY_NCCL_INCLUDE_DIR};${CUDAToolkit_INCLUDE_DIRS}"
        INTERFACE_LINK_LIBRARIES "${DARRAY_NCCL_LIBRARY};CUDA::cudart")
    endif()
  else()
    set(DARRAY_NCCL_INFO "(CUDA found: ${CUDAToolkit_FOUND}, nccl.h: ${DARRAY_NCCL_INCLUDE_DIR}, libnccl: ${DARRAY_NCCL_LIBRARY})")
  endif()
  darray_optional(NCCL "${DARRAY_HAS_NCCL}" "${DARRAY_NCCL_INFO}")
endif()
if(NOT DARRAY_ENABLE_CUFFT STREQUAL "OFF")
  if(CUDAToolkit_FOUND AND TARGET CUDA::cufft)
    set(DARRAY_HAS_CUFFT ON)
    if(NOT TARGET darray::cufft)
      add_library(darray::cufft INTERFACE IMPORTED GLOBAL)
      set_target_properties(darray::cufft PROPERTIES INTERFACE_LINK_LIBRARIES "CUDA::cufft;CUDA::cudart")
    endif()
  endif()
  darray_optional(CUFFT "${DARRAY_HAS_CUFFT}" "CUDA toolkit with cuFFT not found")
endif()

# darray_library_mpi_matches(<lib> <out>): <out> is false when <lib> needs (ELF NEEDED) a libmpi* that none of
# MPI_CXX_LIBRARIES provides; true when it matches, needs no libmpi, or objdump cannot tell.
function(darray_library_mpi_matches lib out)
  set(${out} TRUE PARENT_SCOPE)
  find_program(DARRAY_OBJDUMP NAMES objdump ${CMAKE_OBJDUMP})
  if(NOT DARRAY_OBJDUMP)
    return()
  endif()
  execute_process(COMMAND ${DARRAY_OBJDUMP} -p ${lib} OUTPUT_VARIABLE dump ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "NEEDED +libmpi[^ \n]*" needed "${dump}")
  foreach(entry IN LISTS needed)
    string(REGEX REPLACE "NEEDED +" "" soname "${entry}")
    set(found FALSE)
    foreach(mpi_lib IN LISTS MPI_CXX_LIBRARIES)
      get_filename_component(real "${mpi_lib}" REALPATH)
      get_filename_component(real_name "${real}" NAME)
      string(FIND "${real_name}" "${soname}" at)
      if(at EQUAL 0)
        set(found TRUE)
      endif()
    endforeach()
    if(NOT found)
      set(${out} FALSE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# FFTW 3 (double + single precision); fftw3-mpi is used only by benchmarks, as a baseline.
set(DARRAY_HAS_FFTW OFF)
if(NOT DARRAY_ENABLE_FFTW STREQUAL "OFF")
  find_path(DARRAY_FFTW_INCLUDE_DIR fftw3.h)
  find_library(DARRAY_FFTW_LIBRARY fftw3)
  find_library(DARRAY_FFTWF_LIBRARY fftw3f)
  find_library(DARRAY_FFTW_MPI_LIBRARY fftw3_mpi)
  if(DARRAY_FFTW_INCLUDE_DIR AND DARRAY_FFTW_LIBRARY AND DARRAY_FFTWF_LIBRARY)
    set(DARRAY_HAS_FFTW ON)
    set(DARRAY_FFTW_INFO "${DARRAY_FFTW_LIBRARY}")
    if(NOT TARGET darray::fftw)
      add_library(darray::fftw INTERFACE IMPORTED GLOBAL)
      set_target_properties(darray::fftw PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${DARRAY_FFTW_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${DARRAY_FFTW_LIBRARY};${DARRAY_FFTWF_LIBRARY}")
    endif()
    # fftw3-mpi is built against one MPI (Debian's against Open MPI): linked into a program of another MPI it would
    # bring a second libmpi. Used only when the MPI library it needs is one of this build's.
    if(DARRAY_FFTW_MPI_LIBRARY)
      darray_library_mpi_matches("${DARRAY_FFTW_MPI_LIBRARY}" fftw_mpi_ok)
      if(NOT fftw_mpi_ok)
        message(STATUS "fftw3-mpi (${DARRAY_FFTW_MPI_LIBRARY}) needs another MPI than ${MPI_CXX_LIBRARIES}: "
                       "the benchmarks' FFTW-MPI baseline is left out")
        set(DARRAY_FFTW_MPI_LIBRARY "")
      endif()
    endif()
    if(DARRAY_FFTW_MPI_LIBRARY AND NOT TARGET darray::fftw_mpi)
      add_library(darray::fftw_mpi INTERFACE IMPORTED GLOBAL)
      set_target_properties(darray::fftw_mpi PROPERTIES INTERFACE_LINK_LIBRARIES "${DARRAY_FFTW_MPI_LIBRARY};darray::fftw")
    endif()
  else()
    set(DARRAY_FFTW_INFO "(fftw3.h: ${DARRAY_FFTW_INCLUDE_DIR}, libfftw3: ${DARRAY_FFTW_LIBRARY})")
  endif()
  darray_optional(FFTW "${DARRAY_HAS_FFTW}" "${DARRAY_FFTW_INFO}")
endif()

# CUDA-aware MPI as far as the MPI headers tell (Open MPI, MVAPICH: MPIX_CUDA_AWARE_SUPPORT in <mpi-ext.h>); recorded
# in darray/config.hpp. The run-time query decides what the engine does.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${MPI_CXX_INCLUDE_DIRS})
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([=[
#include <mpi.h>
#include <mpi-ext.h>
#if !defined(MPIX_CUDA_AWARE_SUPPORT) || !MPIX_CUDA_AWARE_SUPPORT
#error no compile-time CUDA-aware support
#endif
int main() { return 0; }
]=] DARRAY_MPI_CUDA_AWARE)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_QUIET)
if(NOT DARRAY_MPI_CUDA_AWARE)
  set(DARRAY_MPI_CUDA_AWARE OFF)
endif()
