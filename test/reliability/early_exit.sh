#!/usr/bin/env bash
# Usage: early_exit.sh MPIEXEC EARLY_EXIT_VICTIM MODE. Runs 3 processes with DARRAY_SHUTDOWN_TIMEOUT_S=3.
# MODE normal: every process reaches the end; the launch must exit 0 within 30 s and print no abort message.
# Other modes: process 1 leaves early while the others enter a collective; the launch must end non-zero within 30 s
# (not hang until the 60 s limit) with a message naming process 1.
set -u
mpiexec=$1 program=$2 mode=$3
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"
start=$(date +%s)
darray_launch 3 "$program" "$mode"
out=$(DARRAY_SHUTDOWN_TIMEOUT_S=3 timeout 60 "${LAUNCH[@]}" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "$out"
echo "mode $mode: exit status $rc after ${elapsed}s"
if [ "$rc" -eq 124 ]; then echo "FAIL: the launch hung until the 60 s limit"; exit 1; fi
if [ "$elapsed" -gt 30 ]; then echo "FAIL: the launch took ${elapsed}s, far beyond the 3 s deadline"; exit 1; fi
if [ "$mode" = normal ]; then
  if [ "$rc" -ne 0 ]; then echo "FAIL: a normal run exited with status $rc"; exit 1; fi
  if grep -q "left" <<<"$out"; then echo "FAIL: a normal run printed an early-exit message"; exit 1; fi
  echo "PASS: normal run, status 0 in ${elapsed}s"; exit 0
fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the launch reported success although process 1 left early"; exit 1; fi
if ! grep -q "process 1 left" <<<"$out"; then echo "FAIL: no message names process 1 as the one that left"; exit 1; fi
if grep -q "finished without process 1" <<<"$out"; then echo "FAIL: a process finished its collective without process 1"; exit 1; fi
if [ "$mode" = unwinding ] && ! grep -q "exception" <<<"$out"; then echo "FAIL: the message does not say an exception ended process 1"; exit 1; fi
echo "PASS: process 1 left early, launch ended with status $rc in ${elapsed}s"
