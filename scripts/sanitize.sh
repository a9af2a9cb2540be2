#!/usr/bin/env bash
# Builds the suite with AddressSanitizer + UndefinedBehaviorSanitizer and runs it (MPI tests with
# ASAN_OPTIONS=detect_leaks=0, UBSan suppressions in test/sanitizers/ubsan.supp). Usage: scripts/sanitize.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-deps.sh"
# shellcheck source=env.sh
source "$here/env.sh"
build=${1:-$LIBDARRAY_ROOT/build-sanitize}
cmake -S "$LIBDARRAY_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDARRAY_SANITIZE=ON -DDARRAY_BUILD_TESTS=ON -DDARRAY_BUILD_APPS=ON -DDARRAY_BUILD_BENCH=OFF
cmake --build "$build" -j "$LIBDARRAY_JOBS"
cd "$build"
# The Slurm and consumer tests launch other builds; they add nothing under sanitizers.
# shellcheck disable=SC2086
ctest --output-on-failure -j "$LIBDARRAY_JOBS" -LE "slurm|consumer" ${CTEST_ARGS:-}
