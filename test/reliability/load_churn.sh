#!/usr/bin/env bash
# Usage: load_churn.sh MPIEXEC LOAD_VICTIM [LOADS]. Two processes load a .npy file LOADS times while a loop removes,
# recreates and renames other versions over it, in two phases: a tight churn (the file is missing or half written
# most of the time) and a paced one (each version stays 10 ms, so most loads complete). Every load must end, on every
# process alike, with one complete version or the same error: the launch must exit 0, must not hang (Open MPI's
# collective MPI_File_open used to wait forever when the file vanished between two processes' opens) and must never
# return a mix of two versions (processes used to read their blocks from different files).
set -u
mpiexec=$1 program=$2 loads=${3:-300}
dir=$(mktemp -d "${TMPDIR:-/tmp}/darray-load-churn.XXXXXX")
churn_pid=""
stop_churn() { [ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null && wait "$churn_pid" 2>/dev/null; churn_pid=""; }
trap 'stop_churn; rm -rf "$dir"' EXIT
a=$dir/a.npy b=$dir/b.npy file=$dir/data.npy
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"
# run NP EXE ARGS...
run() { darray_launch "$@"; timeout 60 "${LAUNCH[@]}"; }
run 1 "$program" make "$a" 1 >/dev/null && run 1 "$program" make "$b" 2 >/dev/null ||
  { echo "FAIL: could not write the two versions"; exit 1; }
# Never an in-place overwrite (a concurrent writer of the same file is no case a reader can survive): the file is
# removed and written anew, or another version is renamed over it.
churn() {
  local pause=$1
  while :; do
    rm -f "$file"; cp "$a" "$file"; sleep "$pause"
    cp "$b" "$file.new"; mv -f "$file.new" "$file"; sleep "$pause"
    rm -f "$file"; cp "$b" "$file"; sleep "$pause"
    cp "$a" "$file.new"; mv -f "$file.new" "$file"; sleep "$pause"
  done
}
for phase in tight paced; do
  cp "$a" "$file"
  if [ "$phase" = tight ]; then churn 0 & else churn 0.01 & fi
  churn_pid=$!
  start=$(date +%s)
  out=$(run 2 "$program" loop "$file" "$loads" 2>&1)
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  stop_churn
  echo "$out" | grep -v '^$' | tail -n 20
  echo "$phase churn, $loads loads: exit status $rc after ${elapsed}s"
  if [ "$rc" -eq 124 ]; then echo "FAIL: $phase churn: the launch hung until the 60 s limit"; exit 1; fi
  if [ "$rc" -ne 0 ]; then echo "FAIL: $phase churn: exit status $rc"; exit 1; fi
  grep -q "^loads: " <<<"$out" || { echo "FAIL: $phase churn: no summary"; exit 1; }
  if [ "$phase" = paced ] && grep -q "^loads: 0 complete" <<<"$out"; then
    echo "FAIL: paced churn: no load completed, so none was checked"; exit 1
  fi
done
echo "PASS: no hang; every load gave one complete version or the same error on every process"
