// detail::read_whole_file: a file's exact bytes whatever its size (empty, one byte, larger than any read at once),
// false for a missing file, IoError naming the path for a directory. Each process reads its own files.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "darray/comm/detail/file_replace.hpp"
#include "mpi_test.hpp"
#include "temp_dir.hpp"

using darray::testing::all_ok;
using darray::testing::world_rank;

TEST_CASE("read_whole_file returns a file's exact bytes at every size") {
  const darray::testing::TempDir dir("darray-read");
  bool ok = true;
  for (const std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(65536), std::size_t(200003)}) {
    const std::string path = dir.file("f" + std::to_string(world_rank()) + "_" + std::to_string(size));
    std::string written(size, '\0');
    for (std::size_t i = 0; i < size; ++i) written[i] = static_cast<char>((i * 131 + size) % 256);
    std::ofstream(path, std::ios::binary).write(written.data(), static_cast<std::streamsize>(size));
    std::string read = "left over from before";
    ok = ok && darray::detail::read_whole_file("test", path, &read) && read == written;
  }
  CHECK(all_ok(ok));
}

TEST_CASE("read_whole_file: a missing file is false, a directory an IoError naming it") {
  const darray::testing::TempDir dir("darray-read");
  std::string text;
  CHECK(all_ok(!darray::detail::read_whole_file("test", dir.file("absent"), &text)));
  std::string message;
  try {
    darray::detail::read_whole_file("test", dir.path(), &text);
  } catch (const darray::IoError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(
      all_ok(message.find(dir.path()) != std::string::npos && message.find("not a regular file") != std::string::npos));
}
