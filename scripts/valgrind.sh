#!/usr/bin/env bash
# Runs every single-process test executable under valgrind's memcheck and fails on a definite leak or memory error
# in libdarray's own code (Open MPI/PMIx/hwloc start-up allocations are suppressed in test/sanitizers/valgrind.supp).
# Usage: scripts/valgrind.sh [build-dir]   (the build dir of scripts/test.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
command -v valgrind >/dev/null || DARRAY_EXTRA_PACKAGES=valgrind "$here/install-deps.sh"
build=${1:-$LIBDARRAY_ROOT/build}
supp=$LIBDARRAY_ROOT/test/sanitizers/valgrind.supp
status=0
for exe in $(find "$build/test" -maxdepth 3 -type f -perm -u+x -name 'test_*' | sort); do
  name=$(basename "$exe")
  # Run as a singleton MPI process (no mpiexec), one host device.
  if DARRAY_HOST_DEVICE_COUNT=1 valgrind --quiet --error-exitcode=99 --leak-check=full \
      --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions="$supp" \
      --gen-suppressions=no "$exe" >"/tmp/valgrind-$name.log" 2>&1; then
    echo "valgrind: $name clean"
  else
    echo "valgrind: $name FAILED (log: /tmp/valgrind-$name.log)"; tail -40 "/tmp/valgrind-$name.log"; status=1
  fi
done
exit $status
