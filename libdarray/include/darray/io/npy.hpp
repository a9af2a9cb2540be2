// Parallel .npy files: io::save_npy writes a DistributedArray into one NumPy file with collective MPI-IO (each
// block once, straight from the process that holds it, no gather), io::load_npy reads any C-order .npy file into
// any sharding, io::read_npy_header says what a file holds. All three are collective over every process.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/detail/file_replace.hpp"
#include "darray/io/detail/block_transfers.hpp"
#include "darray/io/detail/load_file.hpp"
#include "darray/io/detail/mpi_file.hpp"
#include "darray/io/detail/npy_dtype.hpp"
#include "darray/io/detail/npy_file.hpp"
#include "darray/io/detail/npy_header.hpp"
#include "darray/io/npy_header.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace io {

// What the .npy file at `path` holds: dtype string, shape, memory order, data offset. Collective: process 0 reads
// the header and every process returns it, or throws the same IoError for a file that is not a valid .npy.
inline NpyHeader read_npy_header(const std::string& path) {
  detail::check_io_call("io::read_npy_header", path, "");
  return detail::read_npy_header_collective("io::read_npy_header", path, detail::world_comm()).header;
}

// Writes `array` to `path` as a .npy file numpy reads with np.load (format 1.0, C order, little-endian dtype such
// as '<f8', data aligned to 64 bytes). Collective over every process. Each block is written once, by the process
// holding its replica 0, through an MPI subarray file view and MPI_File_write_all; nothing is gathered. An existing
// file is replaced atomically: the data goes to a temporary file beside it, synced by every process, which process 0
// renames over the target once all succeeded, so a crash at any moment leaves the old file or the new one (a killed
// save may leave its temporary, ".<name>.darray-tmp.*", behind). A target that exists but is not a regular file
// (FIFO, directory, device) is an IoError before any process opens it. MPI-IO failures throw the same IoError
// (naming the path and MPI's message) on every process, and the old file stays as it was.
template <class T, int N, class MemorySpace>
void save_npy(const std::string& path, const DistributedArray<T, N, MemorySpace>& array) {
  constexpr const char* api = "io::save_npy";
  detail::check_io_call(
      api, path,
      dtype_name<T>() + " array of shape " + numpy_shape_string(array.shape()) + ", " + array.sharding().to_string());
  const MPI_Comm comm = detail::world_comm();
  const std::string header = detail::format_npy_header(detail::npy_descr<T>(), array.shape());
  detail::BlockTransfers<T, MemorySpace> blocks(/*writing=*/true);
  for (const auto& s : array.addressable_shards())
    if (s.replica_id == 0 && volume(s.index) > 0) blocks.add(s.data.data(), array.shape(), s.index);
  const int rounds = detail::agreed_rounds(blocks.size(), comm);
  detail::fence_writers_of<MemorySpace>();  // kernels that fill the shards may still run (asynchronous on GPUs); MPI
                                            // reads them next

  // Written to a temporary beside the target and renamed over it only once complete (see file_replace.hpp).
  const detail::FileReplacement out = detail::prepare_replacement(api, path, comm);
  try {
    detail::IoLatch latch(api, path);
    MPI_File fh =
        detail::open_collective(comm, out.temporary, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, latch);
    latch.check(MPI_File_set_size(fh, static_cast<MPI_Offset>(header.size() + array.nbytes())), "MPI_File_set_size");
    if (process_index() == 0 && latch.ok()) {
      MPI_Status status;
      if (latch.check(MPI_File_write_at(fh, 0, header.data(), static_cast<int>(header.size()), MPI_BYTE, &status),
                      "MPI_File_write_at (header)")) {
        int wrote = 0;
        if (latch.check(MPI_Get_count(&status, MPI_BYTE, &wrote), "MPI_Get_count") &&
            wrote != static_cast<int>(header.size()))
          latch.fail("wrote " + std::to_string(wrote) + " of " + std::to_string(header.size()) + " header bytes");
      }
    }
    detail::transfer_rounds(fh, static_cast<MPI_Offset>(header.size()), rounds, blocks.transfers(), true, latch);
    // Every process's bytes reach the storage before the rename makes them the file.
    latch.check(MPI_File_sync(fh), "MPI_File_sync");
    latch.check(MPI_File_close(&fh), "MPI_File_close");
    latch.agree(comm);
  } catch (...) {
    detail::discard_replacement(out, comm);
    throw;
  }
  detail::commit_replacement(api, out, comm);
}

// Reads the .npy file at `path` into an array with `sharding`, whatever wrote the file and however many
// processes did. Collective over every process: process 0 reads and checks the header and broadcasts it (or its
// error); then each process opens the file on its own and reads only the blocks its devices hold, each distinct
// block once through a subarray view, copying it to the block's other replicas on the process. Throws IoError for a
// malformed or truncated file, for a file removed, replaced or written to during the load (never a hang or a mix of
// two files), and for a dtype or rank other than T and N, NotSupported for Fortran order and big-endian data; the
// same error on every process.
template <class T, int N, class MemorySpace = DefaultMemorySpace>
DistributedArray<T, N, MemorySpace> load_npy(const std::string& path, const NamedSharding& sharding) {
  constexpr const char* api = "io::load_npy";
  detail::check_io_call(std::string(api) + "<" + dtype_name<T>() + ", " + std::to_string(N) + ">", path,
                        sharding.to_string());
  const MPI_Comm comm = detail::world_comm();
  const detail::NpyFileInfo info = detail::read_npy_header_collective(api, path, comm);
  detail::check_npy_matches<T, N>(info.header, api, path);
  detail::check_npy_data_size(info.header, sizeof(T), info.file_size, api, path);
  const Shape& shape = info.header.shape;
  detail::check_array_args<N>(api, shape, sharding);

  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  const auto distinct = detail::distinct_blocks(devs);
  detail::BlockTransfers<T, MemorySpace> blocks(/*writing=*/false);
  for (const detail::Block& b : distinct) blocks.add(shards[b.holders[0]].data.data(), shape, b.index);
  // Each process reads its own blocks through its own handle, so its rounds need no partner.
  detail::IoLatch latch(api, path);
  int rounds = 0;
  latch.run([&] { rounds = detail::agreed_rounds(blocks.size(), MPI_COMM_SELF); });
  {
    detail::LoadFile file(api, path, info.identity, latch);
    if (file.handle() != MPI_FILE_NULL && latch.ok())
      detail::transfer_rounds(file.handle(), static_cast<MPI_Offset>(info.header.data_offset), rounds,
                              blocks.transfers(), false, latch);
    file.finish(latch);
  }
  latch.agree(comm);
  for (const detail::Block& b : distinct) detail::fill_replicas(shards, b);
  detail::fence_writers_of<MemorySpace>();
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

}  // namespace io
}  // namespace darray
