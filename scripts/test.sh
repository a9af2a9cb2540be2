#!/usr/bin/env bash
# Installs dependencies, configures, builds and runs the whole test suite (ctest), then the MPICH subset
# (scripts/test-mpich.sh --subset, in <build-dir>-mpich). Usage: scripts/test.sh [build-dir]
# Extra ctest arguments can be passed in CTEST_ARGS, e.g. CTEST_ARGS="-R sharding" (the main suite only);
# LIBDARRAY_MPICH_SUBSET=0 skips the MPICH subset.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-deps.sh"
# shellcheck source=env.sh
source "$here/env.sh"
build=${1:-$LIBDARRAY_ROOT/build}
cmake -S "$LIBDARRAY_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDARRAY_BUILD_TESTS=ON -DDARRAY_WARNINGS_AS_ERRORS=ON
cmake --build "$build" -j "$LIBDARRAY_JOBS"
(
  cd "$build"
  # shellcheck disable=SC2086
  ctest --output-on-failure -j "$LIBDARRAY_JOBS" ${CTEST_ARGS:-}
)
if [ "${LIBDARRAY_MPICH_SUBSET:-1}" != 0 ]; then
  "$here/test-mpich.sh" --subset "$build-mpich"
fi
