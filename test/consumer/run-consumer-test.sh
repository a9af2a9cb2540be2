#!/bin/bash
# Builds test/consumer/consumer.cpp the two ways a user can consume libdarray, runs it on 2 processes and checks
# what it prints.
#   installed:    installs the current build tree's package (headers + CMake config only: the top-level install
#                 rules, CMAKE_INSTALL_LOCAL_ONLY, so apps need not be built) into <work>/prefix, then configures
#                 and builds test/consumer/installed with find_package(darray CONFIG) + darray::darray, pointed at
#                 this build's Kokkos (--kokkos-dir) as a user of a Kokkos outside the system's paths would.
#   include-only: no CMake package at all: one mpicxx command with -I<repo>/libdarray/include, Kokkos' include
#                 directory, its core library and its backend flags (--kokkos-flags: -fopenmp for OpenMP).
#   pkg-config:   installs as `installed` does, then one command: mpicxx consumer.cpp $(pkg-config --cflags --libs
#                 darray) with PKG_CONFIG_PATH at the install; runs it on 1 process (and 2, as the others).
#   no-fft:       compiles test/consumer/no_fft.cpp (builds an fft::Plan) include-only against the source tree's
#                 default darray/config.hpp (no FFT backend); the compile must FAIL with the message naming FFTW.
#
# usage: run-consumer-test.sh installed    --work W --source S --build-dir B --cmake CMAKE --cxx CXX [--mpicxx MPICXX] [--kokkos-dir D] --mpiexec M
#        run-consumer-test.sh include-only --work W --source S --mpicxx MPICXX --kokkos-include I --kokkos-lib L [--kokkos-flags F] --mpiexec M
#        run-consumer-test.sh pkg-config   --work W --source S --build-dir B --cmake CMAKE --mpicxx MPICXX --mpiexec M
#        run-consumer-test.sh no-fft       --work W --source S --mpicxx MPICXX --kokkos-include I [--kokkos-flags F] --mpiexec M
# The runs launch as test/support/mpiexec.sh does (flags from DARRAY_TEST_MPIEXEC_*, set by the CTest test).
set -u -o pipefail
# shellcheck source=test/support/mpiexec.sh disable=SC2034  # mpiexec: read by darray_launch
source "$(dirname "${BASH_SOURCE[0]}")/../support/mpiexec.sh"

mode=${1:-}; shift || true
work= source= build_dir= cmake= cxx= mpiexec= mpicxx= kokkos_include= kokkos_lib= kokkos_flags= kokkos_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2 ;;
    --source) source=$2 ;;
    --build-dir) build_dir=$2 ;;
    --cmake) cmake=$2 ;;
    --cxx) cxx=$2 ;;
    --mpiexec) mpiexec=$2 ;;
    --mpicxx) mpicxx=$2 ;;
    --kokkos-include) kokkos_include=$2 ;;
    --kokkos-lib) kokkos_lib=$2 ;;
    --kokkos-flags) kokkos_flags=$2 ;;
    --kokkos-dir) kokkos_dir=$2 ;;
    *) echo "run-consumer-test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done

# The top-level install rules only (headers, config.hpp, CMake package, darray.pc): CMAKE_INSTALL_LOCAL_ONLY, so
# the apps need not be built. Same files as `cmake --install <build> --prefix P` puts there for the library.
install_package() {
  run "$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LOCAL_ONLY=ON -P "$build_dir/cmake_install.cmake"
}
say() { echo "[consumer $(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { say "\$ $*"; "$@" || fail "command failed (exit $?): $*"; }

[ -n "$work" ] && [ -n "$source" ] && [ -n "$mpiexec" ] || fail "missing --work, --source or --mpiexec"
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"

case "$mode" in
  installed)
    [ -n "$build_dir" ] && [ -n "$cmake" ] && [ -n "$cxx" ] || fail "installed: missing --build-dir, --cmake or --cxx"
    prefix=$work/prefix
    install_package
    config=$(find "$prefix" -name darrayConfig.cmake | head -n 1)
    [ -n "$config" ] || fail "no darrayConfig.cmake under $prefix"
    [ -f "$prefix/include/darray/darray.hpp" ] || fail "darray/darray.hpp not installed under $prefix/include"
    say "installed: $config"
    # The consumer's find_dependency(MPI) and find_package(Kokkos) must find the MPI and Kokkos this build used, not
    # the system's default ones (Debian's Trilinos Kokkos when the build used a Kokkos 4 of its own).
    run "$cmake" -S "$source/test/consumer/installed" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release ${mpicxx:+-DMPI_CXX_COMPILER="$mpicxx"} \
      ${kokkos_dir:+-DKokkos_DIR="$kokkos_dir"}
    # The package must come from the install prefix, not from the source or build tree.
    found=$(sed -n 's/^darray_DIR:PATH=//p' "$work/build/CMakeCache.txt")
    case "$found" in
      "$prefix"/*) say "find_package(darray) used $found" ;;
      *) fail "find_package(darray) used '$found', not the package installed under $prefix" ;;
    esac
    if [ -n "$kokkos_dir" ]; then
      found=$(sed -n 's/^Kokkos_DIR:[A-Z]*=//p' "$work/build/CMakeCache.txt")  # UNINITIALIZED when given by -D
      [ "$found" = "$kokkos_dir" ] || fail "find_package(Kokkos) used '$found', not this build's $kokkos_dir"
    fi
    run "$cmake" --build "$work/build" --verbose
    app=$work/build/consumer
    ;;
  include-only)
    [ -n "$mpicxx" ] && [ -n "$kokkos_include" ] && [ -n "$kokkos_lib" ] || fail "include-only: missing --mpicxx, --kokkos-include or --kokkos-lib"
    app=$work/consumer
    # shellcheck disable=SC2086  # kokkos_flags: one or more flags
    run "$mpicxx" -std=c++17 -O2 $kokkos_flags -I"$source/libdarray/include" -I"$kokkos_include" \
      "$source/test/consumer/consumer.cpp" -o "$app" "$kokkos_lib" -ldl
    ;;
  pkg-config)
    [ -n "$build_dir" ] && [ -n "$cmake" ] && [ -n "$mpicxx" ] || fail "pkg-config: missing --build-dir, --cmake or --mpicxx"
    command -v pkg-config >/dev/null || fail "pkg-config not found"
    prefix=$work/prefix
    install_package
    pc=$(find "$prefix" -name darray.pc | head -n 1)
    [ -n "$pc" ] || fail "no darray.pc under $prefix"
    [ -f "$prefix/include/darray/config.hpp" ] || fail "darray/config.hpp not installed under $prefix/include"
    grep -q "DARRAY_CONFIG_GENERATED 1" "$prefix/include/darray/config.hpp" ||
      fail "the installed darray/config.hpp is not the generated one"
    export PKG_CONFIG_PATH=$(dirname "$pc")
    flags=$(pkg-config --cflags --libs darray) || fail "pkg-config --cflags --libs darray failed"
    say "PKG_CONFIG_PATH=$PKG_CONFIG_PATH pkg-config --cflags --libs darray: $flags"
    case "$flags" in
      *"-I$prefix/"*) ;;
      *) fail "pkg-config's Cflags do not name the installed headers under $prefix" ;;
    esac
    app=$work/consumer
    # shellcheck disable=SC2086
    run "$mpicxx" -O2 "$source/test/consumer/consumer.cpp" -o "$app" $flags
    [ -x "$app" ] || fail "no executable at $app"
    darray_launch 1 "$app"
    say "\$ DARRAY_HOST_DEVICE_COUNT=2 ${LAUNCH[*]}"
    out=$(DARRAY_HOST_DEVICE_COUNT=2 timeout -k 5 120 "${LAUNCH[@]}" 2>&1)
    rc=$?
    echo "$out"
    [ $rc = 0 ] || fail "consumer exited with status $rc at 1 process"
    want="consumer: process 0/1 local devices 2 \[cpu(id=0), cpu(id=1)\] global devices 2"
    grep -qx -- "$want" <<<"$out" || fail "missing line: $want"
    ;;
  no-fft)
    [ -n "$mpicxx" ] && [ -n "$kokkos_include" ] || fail "no-fft: missing --mpicxx or --kokkos-include"
    grep -q "DARRAY_CONFIG_GENERATED 0" "$source/libdarray/include/darray/config.hpp" ||
      fail "$source/libdarray/include/darray/config.hpp is not the default (no optional parts) config"
    say "\$ $mpicxx -std=c++17 -fsyntax-only $kokkos_flags -I$source/libdarray/include -I$kokkos_include $source/test/consumer/no_fft.cpp"
    # shellcheck disable=SC2086
    out=$("$mpicxx" -std=c++17 -fsyntax-only $kokkos_flags -I"$source/libdarray/include" -I"$kokkos_include" \
      "$source/test/consumer/no_fft.cpp" 2>&1)
    rc=$?
    grep -E "error|static assert|required from" <<<"$out" | head -n 20
    [ $rc != 0 ] || fail "no_fft.cpp compiled without an FFT backend; expected a compile error"
    want="this build has no FFT backend for the array's memory space. Host memory needs FFTW 3: install it (Debian: libfftw3-dev)"
    grep -qF -- "$want" <<<"$out" || { echo "$out" | tail -n 40; fail "the compile failed without the message: $want"; }
    n=$(grep -c "error" <<<"$out")
    say "compile failed (exit $rc) with the FFT backend message ($n error lines)"
    say "PASS ($mode)"
    exit 0
    ;;
  *) fail "mode must be 'installed', 'include-only', 'pkg-config' or 'no-fft' (got '$mode')" ;;
esac

[ -x "$app" ] || fail "no executable at $app"
darray_launch 2 "$app"
say "\$ DARRAY_HOST_DEVICE_COUNT=3 ${LAUNCH[*]}"
out=$(DARRAY_HOST_DEVICE_COUNT=3 timeout -k 5 120 "${LAUNCH[@]}" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "consumer exited with status $rc"
for want in "consumer: process 0/2 local devices 3 \[cpu(id=0), cpu(id=1), cpu(id=2)\] global devices 6" \
            "consumer: process 1/2 local devices 3 \[cpu(id=3), cpu(id=4), cpu(id=5)\] global devices 6"; do
  grep -qx -- "$want" <<<"$out" || fail "missing line: $want"
done
say "PASS ($mode)"
