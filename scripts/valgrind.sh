#!/usr/bin/env bash
# Runs every single-process MPI test (ctest's <name>.np1.hd1 entries) under valgrind's memcheck, with the test's own
# command line and environment, and fails on any definite leak or memory error in libdarray's own code (Open MPI,
# PMIx and hwloc start-up allocations are suppressed in test/sanitizers/valgrind.supp, each with its reason).
# Executables already built with AddressSanitizer are skipped (the two cannot share a process).
# Usage: scripts/valgrind.sh [build-dir]   (the build dir of scripts/test.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
command -v valgrind >/dev/null || DARRAY_EXTRA_PACKAGES=valgrind "$here/install-deps.sh"
build=${1:-$LIBDARRAY_ROOT/build}
supp=$LIBDARRAY_ROOT/test/sanitizers/valgrind.supp
cd "$build"
ctest --show-only=json-v1 > /tmp/darray-ctest.json
# One line per test: name <TAB> environment (;-separated) <TAB> command (\x1f-separated)
/usr/bin/python3 - /tmp/darray-ctest.json > /tmp/darray-valgrind-tests.txt <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
for t in tests:
    if not t["name"].endswith(".np1.hd1") or "command" not in t:
        continue
    env = []
    for p in t.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            env = p["value"]
    print(t["name"] + "\t" + ";".join(env) + "\t" + "\x1f".join(t["command"]))
PY
status=0
while IFS=$'\t' read -r name envs cmd; do
  IFS=$'\x1f' read -r -a argv <<<"$cmd"
  # argv: mpiexec [flags] -n 1 [preflags, e.g. --oversubscribe] EXE [args]; valgrind goes right before EXE, the first
  # executable file after "-n 1".
  exe_at=-1
  for i in "${!argv[@]}"; do
    if [ "${argv[$i]}" = "-n" ]; then exe_at=$((i + 2)); break; fi
  done
  [ "$exe_at" -ge 0 ] || continue
  while [ "$exe_at" -lt "${#argv[@]}" ] && ! { [ -f "${argv[$exe_at]}" ] && [ -x "${argv[$exe_at]}" ]; }; do
    exe_at=$((exe_at + 1))
  done
  [ "$exe_at" -lt "${#argv[@]}" ] || continue
  exe=${argv[$exe_at]}
  if grep -q "__asan_init" "$exe" 2>/dev/null; then echo "valgrind: $name skipped (built with AddressSanitizer)"; continue; fi
  run=("${argv[@]:0:$exe_at}" valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
       --show-leak-kinds=definite --suppressions="$supp" "${argv[@]:$exe_at}")
  IFS=';' read -r -a env_list <<<"$envs"
  if env "${env_list[@]}" "${run[@]}" </dev/null >"/tmp/valgrind-$name.log" 2>&1; then
    echo "valgrind: $name clean"
  else
    echo "valgrind: $name FAILED (log: /tmp/valgrind-$name.log)"; tail -40 "/tmp/valgrind-$name.log"; status=1
  fi
done </tmp/darray-valgrind-tests.txt
exit $status
