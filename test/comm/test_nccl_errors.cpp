// NCCL return codes translated into darray::NcclError, CUDA ones into darray::CudaError, and the watchdog's error
// paths. These run without a GPU: they exercise argument errors and the error plumbing, not transfers.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "darray/runtime/detail/gpu.hpp"

#if defined(DARRAY_HAS_NCCL)
#include "darray/comm/detail/nccl.hpp"

namespace {
ncclResult_t returns(ncclResult_t rc) { return rc; }
}  // namespace

TEST_CASE("NCCL return codes become NcclError naming the call and NCCL's message") {
  int count = 0;
  try {
    DARRAY_NCCL_CHECK(ncclCommCount(nullptr, &count));
    FAIL("ncclCommCount(nullptr) was accepted");
  } catch (const darray::NcclError& e) {
    const std::string w = e.what();
    CHECK(w.find("ncclCommCount(nullptr, &count)") != std::string::npos);
    CHECK(w.find(ncclGetErrorString(static_cast<ncclResult_t>(e.code()))) != std::string::npos);
    CHECK(e.code() != static_cast<int>(ncclSuccess));
  }
  // The macros are statements; lambdas make them expressions for Catch.
  auto strict_success = [] { DARRAY_NCCL_CHECK(returns(ncclSuccess)); };
  auto strict_in_progress = [] { DARRAY_NCCL_CHECK(returns(ncclInProgress)); };
  auto async_in_progress = [] { DARRAY_NCCL_CHECK_ASYNC(returns(ncclInProgress)); };
  auto async_failure = [] { DARRAY_NCCL_CHECK_ASYNC(returns(ncclSystemError)); };
  CHECK_NOTHROW(strict_success());
  CHECK_THROWS_AS(strict_in_progress(), darray::NcclError);
  CHECK_NOTHROW(async_in_progress());
  CHECK_THROWS_WITH(async_failure(), Catch::Contains("returns(ncclSystemError)") &&
                                         Catch::Contains(ncclGetErrorString(ncclSystemError)));
}

TEST_CASE("CUDA return codes become CudaError naming the call and the error") {
  if (darray::detail::gpu_count() > 0) {
    WARN("SKIP: a GPU is visible, so cudaSetDevice cannot be made to fail by asking for the first one");
    return;
  }
  try {
    DARRAY_CUDA_CHECK(cudaSetDevice(0));
    FAIL("cudaSetDevice(0) succeeded without a visible GPU");
  } catch (const darray::CudaError& e) {
    const std::string w = e.what();
    CHECK(w.find("cudaSetDevice(0)") != std::string::npos);
    CHECK(w.find("cudaError") != std::string::npos);
    CHECK(e.code() != 0);
  }
  (void)cudaGetLastError();
}

TEST_CASE("the NCCL watchdog refuses aborted communicators and enforces its deadline") {
  ncclComm_t aborted = nullptr;
  darray::detail::NcclWatchdog dog("exchange (NCCL)", 1);
  CHECK_THROWS_WITH(dog.poll(aborted),
                    Catch::Contains("exchange (NCCL)") && Catch::Contains("aborted by an earlier error"));
  CHECK_NOTHROW(dog.check_deadline(aborted));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK_THROWS_WITH(dog.check_deadline(aborted), Catch::Contains("did not complete within 1 s") &&
                                                     Catch::Contains("DARRAY_NCCL_TIMEOUT_S") &&
                                                     Catch::Contains("communicator was aborted"));
  const ncclConfig_t config = darray::detail::nonblocking_nccl_config();
  CHECK(config.blocking == 0);
}

#else

TEST_CASE("NCCL error translation") { WARN("SKIP: libdarray was built without NCCL (DARRAY_HAS_NCCL unset)"); }

#endif
