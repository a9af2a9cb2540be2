# darray_add_mpi_test(NAME <name> COMMAND <target-or-exe> [args...] [PROCS 1 2 3 4] [DEVICES 1 2 4] [TIMEOUT s]
#                     [LABELS ...] [ENVIRONMENT VAR=value ...])
# Adds one CTest test per (process count, host device count): <name>.np<P>.hd<D>, launched as
#   mpiexec --oversubscribe -n P <command>   with DARRAY_HOST_DEVICE_COUNT=D.
# Every MPI test has a TIMEOUT: a process that fails before a collective leaves the others waiting, and the timeout
# turns that hang into a failure.
find_program(DARRAY_MPIEXEC NAMES ${MPIEXEC_EXECUTABLE} mpiexec mpirun REQUIRED)
set(DARRAY_MPI_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Oversubscribed ranks must yield the core while they wait, or 4 ranks on 2 cores crawl.
  OMPI_MCA_mpi_yield_when_idle=1
  # Containers often forbid the cross-memory-attach syscalls vader uses for single-copy transfers.
  OMPI_MCA_btl_vader_single_copy_mechanism=none
  OMPI_MCA_rmaps_base_oversubscribe=1
  PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe)
set(DARRAY_MPIEXEC_FLAGS --oversubscribe CACHE STRING "Extra mpiexec flags for tests")
if(DARRAY_SANITIZE)
  # Open MPI's start-up leaks drown real reports (leaks are checked with valgrind instead); overflows and undefined
  # behaviour still stop the test.
  list(APPEND DARRAY_MPI_TEST_ENV
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${PROJECT_SOURCE_DIR}/test/sanitizers/ubsan.supp")
endif()

function(darray_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;PROCS;DEVICES;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_PROCS)
    set(T_PROCS 1 2 3 4)
  endif()
  if(NOT T_DEVICES)
    set(T_DEVICES 1 2 4)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  list(GET T_COMMAND 0 exe)
  list(REMOVE_AT T_COMMAND 0)
  if(TARGET ${exe})
    set(exe $<TARGET_FILE:${exe}>)
  endif()
  foreach(np IN LISTS T_PROCS)
    foreach(hd IN LISTS T_DEVICES)
      set(test_name ${T_NAME}.np${np}.hd${hd})
      add_test(NAME ${test_name}
        COMMAND ${DARRAY_MPIEXEC} ${DARRAY_MPIEXEC_FLAGS} -n ${np} ${exe} ${T_COMMAND})
      set_tests_properties(${test_name} PROPERTIES
        TIMEOUT ${T_TIMEOUT}
        PROCESSORS 1
        LABELS "mpi;${T_LABELS}"
        ENVIRONMENT "${DARRAY_MPI_TEST_ENV};DARRAY_HOST_DEVICE_COUNT=${hd};${T_ENVIRONMENT}")
    endforeach()
  endforeach()
endfunction()

# darray_add_catch_test(<name> <source>... [PROCS ...] [DEVICES ...]): a Catch2 MPI test executable using the
# shared main in test/support, run at each process and host-device count.
function(darray_add_catch_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "PROCS;DEVICES;SOURCES;LABELS;ENVIRONMENT" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE darray_test_main darray::darray)
  if(TARGET darray_test_pch)
    target_precompile_headers(${name} REUSE_FROM darray_test_pch)
  endif()
  set(extra)
  foreach(key PROCS DEVICES LABELS ENVIRONMENT)
    if(T_${key})
      list(APPEND extra ${key} ${T_${key}})
    endif()
  endforeach()
  if(T_TIMEOUT)
    list(APPEND extra TIMEOUT ${T_TIMEOUT})
  endif()
  darray_add_mpi_test(NAME ${name} COMMAND ${name} ${extra})
endfunction()
