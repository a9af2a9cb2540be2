#!/usr/bin/env bash
# Usage: killed_process.sh MPIEXEC VICTIM_PROGRAM. Runs 3 processes, process 1 dies by SIGKILL mid-reshard; passes
# when the launch ends within 60 s with a non-zero status and output that names the lost process.
set -u
mpiexec=$1 program=$2
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"
start=$(date +%s)
darray_launch 3 "$program"
out=$(DARRAY_TEST_KILL_PROCESS=1 timeout 60 "${LAUNCH[@]}" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "$out"
echo "exit status $rc after ${elapsed}s"
if [ "$rc" -eq 124 ]; then echo "FAIL: the launch hung until the 60 s limit"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the launch reported success although a process was killed"; exit 1; fi
if ! grep -qiE "rank 1|process 1\b|\[\[[0-9]+,[0-9]+\],1\]" <<<"$out"; then echo "FAIL: no message names process 1"; exit 1; fi
if grep -q "finished without noticing" <<<"$out"; then echo "FAIL: a survivor finished its loop"; exit 1; fi
echo "PASS: lost process reported, launch ended with status $rc in ${elapsed}s"
