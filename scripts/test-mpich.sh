#!/usr/bin/env bash
# The second toolchain check: builds and runs the whole test suite against Debian's MPICH (Hydra's mpiexec) instead
# of the default Open MPI. Usage: scripts/test-mpich.sh [build-dir]   (default build-mpich; CTEST_ARGS as in test.sh)
# Installs mpich + libmpich-dev when missing. Debian gives Open MPI the higher alternatives priority, so mpicc, mpicxx
# and mpirun stay Open MPI's; should the install switch one, it is set back, so the default build is unchanged.
# Not part of CI (a second full build does not fit its time budget).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
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
cmake --build "$build" -j "$LIBDARRAY_JOBS"
cd "$build"
# shellcheck disable=SC2086
ctest --output-on-failure -j "$LIBDARRAY_JOBS" ${CTEST_ARGS:-}
