# darray_add_mpi_test(NAME <name> COMMAND <target-or-exe> [args...] [PROCS 1 2 3 4] [DEVICES 1 2 4] [TIMEOUT s]
#                     [LABELS ...] [ENVIRONMENT VAR=value ...])
# Adds one CTest test per (process count, host device count): <name>.np<P>.hd<D>, launched the way FindMPI documents
#   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} P ${DARRAY_MPIEXEC_PREFLAGS} <command> ${MPIEXEC_POSTFLAGS} [args]
# with DARRAY_HOST_DEVICE_COUNT=D, and PROCESSORS P (CTest runs a test wider than -j alone).
# Every MPI test has a TIMEOUT: a process that fails before a collective leaves the others waiting, and the timeout
# turns that hang into a failure.
if(NOT MPIEXEC_EXECUTABLE)
  find_program(MPIEXEC_EXECUTABLE NAMES mpiexec mpirun REQUIRED)
endif()
set(DARRAY_MPIEXEC ${MPIEXEC_EXECUTABLE})
if(NOT MPIEXEC_NUMPROC_FLAG)
  set(MPIEXEC_NUMPROC_FLAG -n)
endif()

# Which MPI this is, from MPI_Get_library_version (FindMPI runs it): the launcher its mpiexec is (the name
# darray::launcher() reports) and the flags only that launcher takes. MPICH's descendants (Cray MPICH, Intel MPI,
# MVAPICH) start processes with Hydra or a PMI launcher, as MPICH does.
# Where that string is missing (a cross build cannot run the probe), mpiexec --version says it.
set(darray_mpi_id "${MPI_CXX_LIBRARY_VERSION_STRING}")
if(NOT darray_mpi_id)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE darray_mpi_id ERROR_VARIABLE darray_mpi_id
    TIMEOUT 30)
endif()
set(DARRAY_MPI_LAUNCHER none)
if(darray_mpi_id MATCHES "Open MPI|OpenRTE")
  set(DARRAY_MPI_LAUNCHER openmpi)
elseif(darray_mpi_id MATCHES "MPICH|HYDRA|Intel\\(R\\) MPI|MVAPICH")
  set(DARRAY_MPI_LAUNCHER mpich)
endif()
string(REGEX MATCH "[^\n,]+" darray_mpi_id "${darray_mpi_id}")
message(STATUS "MPI tests: ${darray_mpi_id} (launcher ${DARRAY_MPI_LAUNCHER}): ${MPIEXEC_EXECUTABLE} "
               "${MPIEXEC_NUMPROC_FLAG} P ${MPIEXEC_PREFLAGS}")

# The tests run more processes than a small machine has cores. Open MPI refuses that without --oversubscribe (and
# refuses root without OMPI_ALLOW_RUN_AS_ROOT*); MPICH's Hydra needs neither, and the OMPI_/PRTE_ variables are
# inert there.
unset(DARRAY_MPIEXEC_FLAGS CACHE)  # the Open MPI-only cache entry of earlier versions
set(DARRAY_MPIEXEC_EXTRA_FLAGS "" CACHE STRING "Extra mpiexec flags for tests, after MPIEXEC_PREFLAGS")
set(DARRAY_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
if(DARRAY_MPI_LAUNCHER STREQUAL "openmpi")
  list(APPEND DARRAY_MPIEXEC_PREFLAGS --oversubscribe)
endif()
list(APPEND DARRAY_MPIEXEC_PREFLAGS ${DARRAY_MPIEXEC_EXTRA_FLAGS})
set(DARRAY_MPI_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Oversubscribed ranks must yield the core while they wait, or 4 ranks on 2 cores crawl.
  OMPI_MCA_mpi_yield_when_idle=1
  # Containers often forbid the cross-memory-attach syscalls vader uses for single-copy transfers.
  OMPI_MCA_btl_vader_single_copy_mechanism=none
  OMPI_MCA_rmaps_base_oversubscribe=1
  PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
  # Kokkos 4's OpenMP backend warns on stderr when processes x OMP_NUM_THREADS exceed the cores, which the tests do
  # on purpose; the warning would break the tests that check a program's whole output (allreduce's).
  KOKKOS_DISABLE_WARNINGS=1
  # For the same reason as yield_when_idle: OpenMP threads that spin between kernels starve the other ranks'
  # threads (shallow-water at 4 processes x 2 threads on 2 cores: 164 ms per step instead of 1.5 ms).
  OMP_WAIT_POLICY=passive)
# The shell-script tests (test/support/mpiexec.sh) launch with the same command.
string(JOIN " " darray_pre "${DARRAY_MPIEXEC_PREFLAGS}")
string(JOIN " " darray_post "${MPIEXEC_POSTFLAGS}")
list(APPEND DARRAY_MPI_TEST_ENV "DARRAY_TEST_MPIEXEC=${MPIEXEC_EXECUTABLE}"
  "DARRAY_TEST_MPIEXEC_NUMPROC_FLAG=${MPIEXEC_NUMPROC_FLAG}" "DARRAY_TEST_MPIEXEC_PREFLAGS=${darray_pre}"
  "DARRAY_TEST_MPIEXEC_POSTFLAGS=${darray_post}")

# darray_mpiexec_command(<out-var> <np> <exe> [args...]): the launch command as a list.
function(darray_mpiexec_command out np exe)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${DARRAY_MPIEXEC_PREFLAGS} ${exe}
    ${MPIEXEC_POSTFLAGS} ${ARGN} PARENT_SCOPE)
endfunction()

if(DARRAY_SANITIZE)
  # Open MPI's start-up leaks drown real reports (leaks are checked with valgrind instead); overflows and undefined
  # behaviour still stop the test. A request larger than ASan's allocator serves returns null, as malloc does, so
  # that a block too large to allocate is the darray::Error a user sees (test_errors.cpp), not ASan's abort.
  list(APPEND DARRAY_MPI_TEST_ENV
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:allocator_may_return_null=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${PROJECT_SOURCE_DIR}/test/sanitizers/ubsan.supp")
endif()

# The TIMEOUT of a test of `np` processes: `base`, or 4 x `base` under MPICH when np exceeds the machine's cores.
# MPICH busy-polls while it waits, so oversubscribed processes take turns at the scheduler's pace: under MPICH
# 4.0.2 on 2 cores, test_collectives_checked.np3.hd2 (DARRAY_CHECK=1, 1.6 s under Open MPI) took 139 s and the
# 120 s limit stopped it. The limit still ends a hang.
cmake_host_system_information(RESULT darray_host_cores QUERY NUMBER_OF_LOGICAL_CORES)
function(darray_mpi_test_timeout out base np)
  set(t ${base})
  if(DARRAY_MPI_LAUNCHER STREQUAL "mpich" AND np GREATER darray_host_cores)
    math(EXPR t "${base} * 4")
  endif()
  set(${out} ${t} PARENT_SCOPE)
endfunction()

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
    darray_mpi_test_timeout(timeout ${T_TIMEOUT} ${np})
    foreach(hd IN LISTS T_DEVICES)
      set(test_name ${T_NAME}.np${np}.hd${hd})
      darray_mpiexec_command(cmd ${np} ${exe} ${T_COMMAND})
      add_test(NAME ${test_name} COMMAND ${cmd})
      set_tests_properties(${test_name} PROPERTIES
        TIMEOUT ${timeout}
        PROCESSORS ${np}
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
