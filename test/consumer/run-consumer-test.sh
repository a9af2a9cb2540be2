#!/bin/bash
# Builds test/consumer/consumer.cpp the two ways a user can consume libdarray, runs it on 2 processes and checks
# what it prints.
#   installed:    installs the current build tree's package (headers + CMake config only: the top-level install
#                 rules, CMAKE_INSTALL_LOCAL_ONLY, so apps need not be built) into <work>/prefix, then configures
#                 and builds test/consumer/installed with find_package(darray CONFIG) + darray::darray.
#   include-only: no CMake package at all: one mpicxx command with -I<repo>/libdarray/include, Kokkos' include
#                 directory and its core library.
#
# usage: run-consumer-test.sh installed    --work W --source S --build-dir B --cmake CMAKE --cxx CXX --mpiexec M [--mpiexec-flags "F"]
#        run-consumer-test.sh include-only --work W --source S --mpicxx MPICXX --kokkos-include I --kokkos-lib L --mpiexec M [--mpiexec-flags "F"]
set -u -o pipefail

mode=${1:-}; shift || true
work= source= build_dir= cmake= cxx= mpiexec= mpiexec_flags= mpicxx= kokkos_include= kokkos_lib=
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2 ;;
    --source) source=$2 ;;
    --build-dir) build_dir=$2 ;;
    --cmake) cmake=$2 ;;
    --cxx) cxx=$2 ;;
    --mpiexec) mpiexec=$2 ;;
    --mpiexec-flags) mpiexec_flags=$2 ;;
    --mpicxx) mpicxx=$2 ;;
    --kokkos-include) kokkos_include=$2 ;;
    --kokkos-lib) kokkos_lib=$2 ;;
    *) echo "run-consumer-test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done

say() { echo "[consumer $(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { say "\$ $*"; "$@" || fail "command failed (exit $?): $*"; }

[ -n "$work" ] && [ -n "$source" ] && [ -n "$mpiexec" ] || fail "missing --work, --source or --mpiexec"
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"

case "$mode" in
  installed)
    [ -n "$build_dir" ] && [ -n "$cmake" ] && [ -n "$cxx" ] || fail "installed: missing --build-dir, --cmake or --cxx"
    prefix=$work/prefix
    run "$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LOCAL_ONLY=ON -P "$build_dir/cmake_install.cmake"
    config=$(find "$prefix" -name darrayConfig.cmake | head -n 1)
    [ -n "$config" ] || fail "no darrayConfig.cmake under $prefix"
    [ -f "$prefix/include/darray/darray.hpp" ] || fail "darray/darray.hpp not installed under $prefix/include"
    say "installed: $config"
    run "$cmake" -S "$source/test/consumer/installed" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release
    # The package must come from the install prefix, not from the source or build tree.
    found=$(sed -n 's/^darray_DIR:PATH=//p' "$work/build/CMakeCache.txt")
    case "$found" in
      "$prefix"/*) say "find_package(darray) used $found" ;;
      *) fail "find_package(darray) used '$found', not the package installed under $prefix" ;;
    esac
    run "$cmake" --build "$work/build" --verbose
    app=$work/build/consumer
    ;;
  include-only)
    [ -n "$mpicxx" ] && [ -n "$kokkos_include" ] && [ -n "$kokkos_lib" ] || fail "include-only: missing --mpicxx, --kokkos-include or --kokkos-lib"
    app=$work/consumer
    run "$mpicxx" -std=c++17 -O2 -I"$source/libdarray/include" -I"$kokkos_include" \
      "$source/test/consumer/consumer.cpp" -o "$app" "$kokkos_lib" -ldl
    ;;
  *) fail "mode must be 'installed' or 'include-only' (got '$mode')" ;;
esac

[ -x "$app" ] || fail "no executable at $app"
# shellcheck disable=SC2086
say "\$ DARRAY_HOST_DEVICE_COUNT=3 $mpiexec $mpiexec_flags -n 2 $app"
out=$(DARRAY_HOST_DEVICE_COUNT=3 timeout -k 5 120 "$mpiexec" $mpiexec_flags -n 2 "$app" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "consumer exited with status $rc"
for want in "consumer: process 0/2 local devices 3 \[cpu(id=0), cpu(id=1), cpu(id=2)\] global devices 6" \
            "consumer: process 1/2 local devices 3 \[cpu(id=3), cpu(id=4), cpu(id=5)\] global devices 6"; do
  grep -qx -- "$want" <<<"$out" || fail "missing line: $want"
done
say "PASS ($mode)"
