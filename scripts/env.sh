# Sourced by the scripts: Open MPI settings for running as root, oversubscribed, in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
LIBDARRAY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIBDARRAY_JOBS=${LIBDARRAY_JOBS:-$(nproc)}
export LIBDARRAY_ROOT LIBDARRAY_JOBS
