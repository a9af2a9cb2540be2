#!/usr/bin/env bash
# Usage: save_kill.sh MPIEXEC SAVE_VICTIM [ROUNDS]. Two processes save a .npy file over and over, each iteration
# with different contents; one of them is SIGKILLed at a random moment, ROUNDS times. After every kill the file
# must load and hold exactly one complete iteration: the one saved last before the kill began, or a later one,
# never a torn mix of two iterations (or of an iteration and zeros).
set -u
mpiexec=$1 program=$2 rounds=${3:-6}
dir=$(mktemp -d "${TMPDIR:-/tmp}/darray-save-kill.XXXXXX")
trap 'rm -rf "$dir"' EXIT
file=$dir/data.npy
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"
# run NP EXE ARGS...
run() { darray_launch "$@"; timeout 60 "${LAUNCH[@]}"; }

run 2 "$program" init "$file" 0 || { echo "FAIL: the initial save failed"; exit 1; }
for round in $(seq 1 "$rounds"); do
  base=$((round * 100000))
  rm -f "$dir"/pid.*
  run 2 "$program" loop "$file" "$base" "$dir" >"$dir/loop.log" 2>&1 &
  launcher=$!
  for _ in $(seq 1 600); do [ -s "$dir/pid.1" ] && break; sleep 0.05; done
  if [ ! -s "$dir/pid.1" ]; then cat "$dir/loop.log"; echo "FAIL: round $round: the save loop did not start"; exit 1; fi
  # A random moment in the next 0.5 s; a save takes tens of milliseconds, so most kills land inside one.
  sleep "0.$(printf '%03d' $((RANDOM % 500)))"
  victim=$((RANDOM % 2))
  kill -KILL "$(cat "$dir/pid.$victim")" 2>/dev/null
  wait "$launcher"
  rc=$?
  [ "$rc" -eq 124 ] && { echo "FAIL: round $round: the launch hung after the kill"; exit 1; }
  out=$(run 1 "$program" check "$file" 2>&1)
  crc=$?
  echo "round $round: killed process $victim, launch status $rc; file: $out"
  if [ "$crc" -ne 0 ]; then echo "FAIL: round $round: the file is torn or unreadable after the kill"; exit 1; fi
  it=$(sed -n 's/^iteration \([0-9]*\)$/\1/p' <<<"$out")
  # The first save of this round completed before the kill could start, so the file holds this round's data.
  if [ -z "$it" ] || [ "$it" -le "$base" ] || [ "$it" -ge $((base + 100000)) ]; then
    echo "FAIL: round $round: the file holds iteration '$it', not one saved in this round ($((base + 1)) or later)"
    exit 1
  fi
done
left=$(find "$dir" -name '.data.npy.*' | wc -l)
echo "PASS: $rounds kills, the file always held one complete iteration ($left temporary file(s) left by killed saves)"
