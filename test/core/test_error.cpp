#include <catch2/catch.hpp>

#include "darray/core/error.hpp"

TEST_CASE("Error carries api, message, file and line") {
  try {
    DARRAY_THROW(InvalidArgument, "PartitionSpec",
                 "mesh axis \""
                     << "z"
                     << "\" not found; mesh axes are (\"x\", \"y\")");
    FAIL("no throw");
  } catch (const darray::InvalidArgument& e) {
    const std::string what = e.what();
    CHECK(e.api() == "PartitionSpec");
    CHECK(e.message() == "mesh axis \"z\" not found; mesh axes are (\"x\", \"y\")");
    CHECK(what.rfind("darray::PartitionSpec: mesh axis \"z\" not found", 0) == 0);
    CHECK(what.find("test_error.cpp:") != std::string::npos);
  }
}

TEST_CASE("Error family is catchable as darray::Error and std::exception") {
  CHECK_THROWS_AS(throw darray::NotSupported("nccl", "no GPU"), darray::Error);
  CHECK_THROWS_AS(throw darray::MpiError("MPI_Send", "bad", 3), std::runtime_error);
  darray::MpiError e("MPI_Send", "bad", 3);
  CHECK(e.code() == 3);
  darray::NcclError n("ncclSend", "unhandled cuda error", 1);
  CHECK(n.code() == 1);
  darray::CudaError c("cudaMalloc", "cudaErrorMemoryAllocation: out of memory", 2);
  CHECK(c.code() == 2);
  CHECK_THROWS_AS(throw darray::CufftError("cuFFT", "cufftExecZ2Z returned CUFFT_EXEC_FAILED (6)", 6), darray::Error);
  CHECK_NOTHROW([] { DARRAY_THROW_IF(false, InvalidArgument, "x", "never"); }());
  CHECK_THROWS_AS([] { DARRAY_THROW_IF(true, IoError, "load_npy", "bad magic"); }(), darray::IoError);
}
