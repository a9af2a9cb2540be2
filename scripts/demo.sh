#!/usr/bin/env bash
# Installs dependencies, builds the apps and runs the main demos under mpirun: 2 processes x 4 host devices each,
# i.e. 8 simulated devices. Usage: scripts/demo.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-deps.sh"
# shellcheck source=env.sh
source "$here/env.sh"
build=${1:-$LIBDARRAY_ROOT/build}
cmake -S "$LIBDARRAY_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$LIBDARRAY_JOBS"
run() { echo; echo "\$ DARRAY_HOST_DEVICE_COUNT=4 mpirun -np 2 $*"; DARRAY_HOST_DEVICE_COUNT=4 mpirun --oversubscribe -np 2 "$@"; }
for app in darray-info allreduce sharded-load shallow-water; do
  exe=$(find "$build/apps" -maxdepth 2 -type f -name "$app" -perm -u+x | head -n 1)
  [ -n "$exe" ] && run "$exe"
done
echo; echo "demo: done"
