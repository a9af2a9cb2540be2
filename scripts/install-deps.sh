#!/usr/bin/env bash
# Installs libdarray's build and test dependencies from Debian 12 packages. Idempotent: packages already present
# are skipped, and apt-get runs only when something is missing. Runs as root, or through sudo when available.
set -euo pipefail

packages=(
  build-essential cmake git pkg-config
  libopenmpi-dev openmpi-bin            # MPI (required)
  libtrilinos-kokkos-dev                # Kokkos 3.4 (required)
  catch2 libcli11-dev                   # tests, command-line flags of apps and benchmarks
  libfftw3-dev libfftw3-mpi-dev         # CPU FFT, and FFTW-MPI as the benchmark baseline
  python3-numpy                         # .npy interoperability tests (Debian's /usr/bin/python3)
  clang libclang-rt-14-dev              # libFuzzer target for the .npy header parser
  slurmctld slurmd slurm-client munge   # the real single-node Slurm launch test
  slurm-wlm-basic-plugins               # its mpi_pmix plugin (srun --mpi=pmix)
  libpmix-dev                           # PMIx for srun --mpi=pmix
  doxygen clang-format                  # the API reference (docs.doxygen) and the format check (format.clang-format)
)
extra=${DARRAY_EXTRA_PACKAGES:-}
# shellcheck disable=SC2206
[ -n "$extra" ] && packages+=($extra)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
