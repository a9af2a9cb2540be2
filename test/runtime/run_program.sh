#!/usr/bin/env bash
# Usage: run_program.sh MPIEXEC RUN_VICTIM MODE. Runs 3 processes of run_victim (see its header for the modes) and
# checks the launch's exit status and that exactly one process reported the error.
set -u
mpiexec=$1 program=$2 mode=$3
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"
start=$(date +%s)
darray_launch 3 "$program" "$mode"
out=$(timeout 90 "${LAUNCH[@]}" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "$out"
echo "mode $mode: exit status $rc after ${elapsed}s"
errors=$(grep -c "^error" <<<"$out")
if [ "$rc" -eq 124 ]; then echo "FAIL: the launch hung until the 90 s limit"; exit 1; fi
case "$mode" in
  ok)
    [ "$rc" -eq 0 ] || { echo "FAIL: status $rc"; exit 1; }
    [ "$errors" -eq 0 ] || { echo "FAIL: error lines printed"; exit 1; }
    [ "$(grep -c ' done' <<<"$out")" -eq 3 ] || { echo "FAIL: not every process finished"; exit 1; } ;;
  all|one)
    [ "$rc" -ne 0 ] || { echo "FAIL: the launch reported success"; exit 1; }
    [ "$errors" -eq 1 ] || { echo "FAIL: $errors error lines; expected exactly one"; exit 1; }
    grep -q "bad input" <<<"$out" || { echo "FAIL: the message is not the error's"; exit 1; }
    if grep -q "Backtrace\|terminate called\|MPI_ABORT" <<<"$out"; then echo "FAIL: abort or backtrace"; exit 1; fi ;;
  blocked)
    [ "$rc" -ne 0 ] || { echo "FAIL: the launch reported success"; exit 1; }
    [ "$elapsed" -le 60 ] || { echo "FAIL: took ${elapsed}s"; exit 1; }
    grep -q "error on process 1" <<<"$out" || { echo "FAIL: no message names process 1"; exit 1; }
    grep -q "process 1 gave up" <<<"$out" || { echo "FAIL: the message is not the error's"; exit 1; } ;;
esac
echo "PASS: mode $mode"
