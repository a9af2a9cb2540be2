# shellcheck shell=bash
# Sourced by the shell-script tests. darray_launch NP EXE [ARGS...] sets the array LAUNCH to the command that starts
# NP processes of EXE the way CMake's FindMPI documents:
#   MPIEXEC $DARRAY_TEST_MPIEXEC_NUMPROC_FLAG NP $DARRAY_TEST_MPIEXEC_PREFLAGS EXE $DARRAY_TEST_MPIEXEC_POSTFLAGS ARGS
# MPIEXEC is the script's $mpiexec; the flags come from each test's environment (cmake/DarrayTesting.cmake: Open MPI
# gets --oversubscribe, MPICH's Hydra nothing). Run it as: darray_launch 3 prog x; timeout 60 "${LAUNCH[@]}"
darray_launch() {
  local np=$1 exe=$2
  shift 2
  # shellcheck disable=SC2034,SC2206  # the caller runs LAUNCH; the flag lists are words to split
  LAUNCH=("${mpiexec:?}" ${DARRAY_TEST_MPIEXEC_NUMPROC_FLAG:--n} "$np" ${DARRAY_TEST_MPIEXEC_PREFLAGS-} "$exe"
    ${DARRAY_TEST_MPIEXEC_POSTFLAGS-} "$@")
}
