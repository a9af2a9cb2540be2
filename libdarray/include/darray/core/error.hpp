// darray::Error and its family. Every error names the API that raised it, the offending value and what was
// expected; DARRAY_THROW adds file and line. Checks that can throw depend only on replicated metadata, so every
// process throws the same error (see docs/design.md "Consistency").
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace darray {

class Error : public std::runtime_error {
 public:
  Error(std::string api, const std::string& message, const char* file = nullptr, int line = 0)
      : std::runtime_error(compose(api, message, file, line)), m_api(std::move(api)), m_message(message) {}
  // The API name that raised the error, e.g. "PartitionSpec".
  const std::string& api() const noexcept { return m_api; }
  // The message without the API prefix and source location.
  const std::string& message() const noexcept { return m_message; }

 private:
  static std::string compose(const std::string& api, const std::string& message, const char* file, int line) {
    std::ostringstream os;
    os << "darray::" << api << ": " << message;
    if (file != nullptr) os << " [" << file << ":" << line << "]";
    return os.str();
  }
  std::string m_api;
  std::string m_message;
};

// A value the caller passed (argument, environment variable, flag, file content) is malformed or impossible.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A valid request this build or machine cannot serve (no GPU, NCCL not compiled in, ...).
class NotSupported : public Error {
 public:
  using Error::Error;
};

// An error a library call reported as a return code; code() is that code.
class CodedError : public Error {
 public:
  CodedError(std::string api, const std::string& message, int code, const char* file = nullptr, int line = 0)
      : Error(std::move(api), message, file, line), m_code(code) {}
  int code() const noexcept { return m_code; }

 private:
  int m_code;
};

// An MPI call returned an error code; the message carries MPI's own error string.
class MpiError : public CodedError {
 public:
  using CodedError::CodedError;
};

// An NCCL call returned an error code, or a communicator reported an asynchronous error.
class NcclError : public CodedError {
 public:
  using CodedError::CodedError;
};

// A CUDA runtime call returned an error code; the message carries the error's name and CUDA's description.
class CudaError : public CodedError {
 public:
  using CodedError::CodedError;
};

// A cuFFT call returned an error code; the message names the cufftResult value (CUFFT_ALLOC_FAILED, ...).
class CufftError : public CodedError {
 public:
  using CodedError::CodedError;
};

// A file is malformed, truncated or does not match the requested type.
class IoError : public Error {
 public:
  using Error::Error;
};

}  // namespace darray

// DARRAY_THROW(InvalidArgument, "PartitionSpec", "mesh axis \"" << name << "\" not found")
#define DARRAY_THROW(Kind, api, stream_expr)                                 \
  do {                                                                       \
    std::ostringstream darray_throw_os_;                                     \
    darray_throw_os_ << stream_expr;                                         \
    throw ::darray::Kind((api), darray_throw_os_.str(), __FILE__, __LINE__); \
  } while (false)

// Throws Kind when cond holds.
#define DARRAY_THROW_IF(cond, Kind, api, stream_expr) \
  do {                                                \
    if (cond) DARRAY_THROW(Kind, api, stream_expr);   \
  } while (false)
