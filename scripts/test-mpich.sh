#!/usr/bin/env bash
# The second toolchain check: builds and runs the test suite against Debian's MPICH (Hydra's mpiexec) instead of the
# default Open MPI. Usage: scripts/test-mpich.sh [--subset] [build-dir]   (default build-mpich)
#   (no flag)  the whole suite; CTEST_ARGS as in test.sh. Not in CI: a second full build does not fit its budget.
#   --subset   only the targets and tests in `subset` below: what differs between MPI implementations. CI runs this
#              (scripts/test.sh calls it after the main suite); about 5 minutes on 2 cores.
# Installs mpich + libmpich-dev when missing. Debian gives Open MPI the higher alternatives priority, so mpicc, mpicxx
# and mpirun stay Open MPI's; should the install switch one, it is set back, so the default build is unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=full
if [ "${1:-}" = "--subset" ]; then
  mode=subset
  shift
fi

# The CI subset, the one list of it: each line is a build target, then the ctest tests that run it. At 2 processes
# where the test allows (MPICH busy-polls: oversubscribed runs crawl). The transport (p2p, chunked messages,
# sub-communicators, the collective-consistency checks), Environments created and destroyed, the tests that hit
# MPICH's error handler on MPI_COMM_WORLD (mismatched operations and the deadline on waits and meetings:
# detail::WorldReturnsErrors), a multi-process reshard, the all-reduce example, and a process leaving early (the
# shutdown's MPI_Ibarrier and MPI_Abort under Hydra, and darray::run's failure agreement; 3 processes, about 3 s each).
subset=(
  "test_comm           test_comm.np2.hd1 test_comm_max4099.np2.hd1 test_comm_check.np2.hd1"
  "test_comm_lifecycle test_comm_lifecycle.np2.hd1"
  "test_mismatch       test_mismatch.np2.hd1 test_mismatch.np2.hd2"
  "test_deadline       test_deadline.np2.hd1"
  "test_arrival        test_arrival.np2.hd1 test_arrival.process_allgather-skipped.np2.hd1"
  "test_reshard        test_reshard.np2.hd2"
  "allreduce           allreduce.np2.hd1 allreduce.multi.np2.hd4"
  "early_exit_victim   reliability.early-exit.normal reliability.early-exit.barrier reliability.early-exit.unwinding reliability.early-exit.run"
)

"$here/install-deps.sh"
# shellcheck source=env.sh
source "$here/env.sh"
build=${1:-$LIBDARRAY_ROOT/build-mpich}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
alternatives=(mpi mpirun mpi-x86_64-linux-gnu)
current() { update-alternatives --query "$1" 2>/dev/null | sed -n 's/^Value: //p'; }
if ! dpkg-query -W -f='${Status}' mpich libmpich-dev 2>/dev/null | grep -q "install ok installed"; then
  declare -A before
  for a in "${alternatives[@]}"; do before[$a]=$(current "$a"); done
  echo "test-mpich: installing mpich libmpich-dev"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends mpich libmpich-dev
  # Keep the system's default MPI what it was (mpicc, mpicxx, mpirun, the mpi.h include link), should the install
  # have moved an alternative.
  for a in "${alternatives[@]}"; do
    now=$(current "$a")
    if [ -n "${before[$a]}" ] && [ "$now" != "${before[$a]}" ]; then
      echo "test-mpich: the install moved alternative $a to $now; setting it back to ${before[$a]}"
      $sudo update-alternatives --set "$a" "${before[$a]}"
    fi
  done
fi
for a in "${alternatives[@]}"; do echo "test-mpich: default $a -> $(current "$a")"; done

# The MPICH programs by their own names: CMake's FindMPI takes the MPI from the compiler wrapper, and the tests launch
# with MPIEXEC_EXECUTABLE.
cmake -S "$LIBDARRAY_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDARRAY_BUILD_TESTS=ON \
  -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich -DMPI_C_COMPILER=/usr/bin/mpicc.mpich \
  -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich
if [ "$mode" = full ]; then
  cmake --build "$build" -j "$LIBDARRAY_JOBS"
  cd "$build"
  # shellcheck disable=SC2086
  ctest --output-on-failure -j "$LIBDARRAY_JOBS" ${CTEST_ARGS:-}
  exit 0
fi

targets=() tests=()
for line in "${subset[@]}"; do
  read -r target names <<<"$line"
  targets+=("$target")
  # shellcheck disable=SC2206  # the test names are words
  tests+=($names)
done
regex="^($(IFS='|'; echo "${tests[*]//./\\.}"))\$"
echo "test-mpich: subset: building ${targets[*]}"
cmake --build "$build" -j "$LIBDARRAY_JOBS" --target "${targets[@]}"
cd "$build"
# A test renamed or dropped must fail the subset, not shrink it.
listed=$(ctest -N -R "$regex" | sed -n 's/^Total Tests: //p')
if [ "$listed" != "${#tests[@]}" ]; then
  echo "test-mpich: subset: ctest knows $listed of the ${#tests[@]} tests: ${tests[*]}" >&2
  exit 1
fi
ctest --output-on-failure -j "$LIBDARRAY_JOBS" -R "$regex"
