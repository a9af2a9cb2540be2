// Every DARRAY_* variable and every string parser rejects malformed values with an error naming the variable (or
// API), the value and what is accepted. One table row per case.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;

namespace {
struct EnvCase {
  const char* name;
  const char* value;
  const char* accepted;  // a fragment of the "expected ..." part
};

// Validates one variable through the registry the Environment uses at start-up.
std::string validate(const char* name) {
  for (const auto& v : detail::env_vars())
    if (std::string(v.name) == name) return darray::testing::error_message<InvalidArgument>(v.validate);
  return "unknown variable";
}
}  // namespace

TEST_CASE("malformed environment variables: the table") {
  const EnvCase cases[] = {
      {"DARRAY_HOST_DEVICE_COUNT", "abc", "an integer from 1 to 4096"},
      {"DARRAY_HOST_DEVICE_COUNT", "0", "an integer from 1 to 4096"},
      {"DARRAY_HOST_DEVICE_COUNT", "-3", "an integer from 1 to 4096"},
      {"DARRAY_HOST_DEVICE_COUNT", "4097", "an integer from 1 to 4096"},
      {"DARRAY_HOST_DEVICE_COUNT", "", "an integer from 1 to 4096"},
      {"DARRAY_HOST_DEVICE_COUNT", "8 devices", "an integer from 1 to 4096"},
      {"DARRAY_LOCAL_DEVICE_IDS", "a", "distinct GPU ordinals"},
      {"DARRAY_LOCAL_DEVICE_IDS", "0,0", "distinct GPU ordinals"},
      {"DARRAY_LOCAL_DEVICE_IDS", "-1", "distinct GPU ordinals"},
      {"DARRAY_LOCAL_DEVICE_IDS", "0;1", "distinct GPU ordinals"},
      {"DARRAY_BACKEND", "gloo", "mpi|nccl"},
      {"DARRAY_BACKEND", "MPI", "mpi|nccl"},
      {"DARRAY_CHECK", "maybe", "0|1|true|false"},
      {"DARRAY_CHECK", "2", "0|1|true|false"},
      {"DARRAY_LOG", "verbose", "warn|info|debug"},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "0", "bytes per MPI message"},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "1", "from 4096 (the minimum)"},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "4095", "from 4096 (the minimum)"},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "3GB", "bytes per MPI message"},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "4294967296", "bytes per MPI message"},
      {"DARRAY_NCCL_TIMEOUT_S", "soon", "whole number of seconds"},
      {"DARRAY_SHUTDOWN_TIMEOUT_S", "5s", "whole number of seconds from 0 (wait forever)"},
      {"DARRAY_SHUTDOWN_TIMEOUT_S", "-1", "whole number of seconds from 0 (wait forever)"},
      {"DARRAY_SHUTDOWN_TIMEOUT_S", "", "whole number of seconds from 0 (wait forever)"},
      {"DARRAY_TIMEOUT_S", "1.5", "whole number of seconds from 0 (no deadline)"},
      {"DARRAY_TIMEOUT_S", "31536001", "whole number of seconds from 0 (no deadline)"},
      {"DARRAY_NCCL_TIMEOUT_S", "0", "whole number of seconds"},
      {"DARRAY_CACHE_BYTES", "lots", "a byte count"},
      {"DARRAY_CACHE_BYTES", "-1", "a byte count"},
      {"DARRAY_CACHE_BYTES", "4X", "a byte count"},
      {"DARRAY_CACHE_BYTES", "99999999999T", "a byte count"},
      {"DARRAY_SINGLE_COPY", "maybe", "0|1|true|false"},
      {"DARRAY_SINGLE_COPY", "2", "0|1|true|false"},
      {"DARRAY_HUGE_PAGES", "always", "0|1|true|false"},
  };
  for (const auto& c : cases) {
    const auto saved = detail::getenv_opt(c.name);
    ::setenv(c.name, c.value, 1);
    const std::string msg = validate(c.name);
    if (saved)
      ::setenv(c.name, saved->c_str(), 1);
    else
      ::unsetenv(c.name);
    INFO(c.name << "=\"" << c.value << "\" -> " << msg);
    CHECK(msg.find(c.name) != std::string::npos);
    CHECK(msg.find(std::string("\"") + c.value + "\"") != std::string::npos);
    CHECK(msg.find(c.accepted) != std::string::npos);
  }
}

TEST_CASE("well-formed values pass, and every variable is in the registry") {
  const std::pair<const char*, const char*> good[] = {
      {"DARRAY_HOST_DEVICE_COUNT", "8"}, {"DARRAY_LOCAL_DEVICE_IDS", "0,1"},
      {"DARRAY_BACKEND", "nccl"},        {"DARRAY_CHECK", "on"},
      {"DARRAY_LOG", "debug"},           {"DARRAY_MPI_MAX_MESSAGE_BYTES", "4096"},
      {"DARRAY_NCCL_TIMEOUT_S", "30"},   {"DARRAY_CACHE_BYTES", "0"},
      {"DARRAY_CACHE_BYTES", "4GiB"},    {"DARRAY_SHUTDOWN_TIMEOUT_S", "0"},
      {"DARRAY_TIMEOUT_S", "600"},       {"DARRAY_SINGLE_COPY", "0"},
      {"DARRAY_HUGE_PAGES", "0"}};
  for (const auto& [name, value] : good) {
    const auto saved = detail::getenv_opt(name);
    ::setenv(name, value, 1);
    INFO(name << "=" << value);
    CHECK(validate(name).empty());
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }
  CHECK(detail::env_vars().size() == 12);
}

TEST_CASE("unknown DARRAY_ variables are reported (typos), test helpers' prefixes are not") {
  std::string a = "DARRAY_HOST_DEVICES=8", b = "DARRAY_TEST_KILL_PROCESS=1", c = "DARRAY_LOG=info", d = "PATH=/bin";
  char* env[] = {a.data(), b.data(), c.data(), d.data(), nullptr};
  CHECK(detail::unknown_env_vars(env) == std::vector<std::string>{"DARRAY_HOST_DEVICES"});
}

TEST_CASE("string parsers reject malformed input: the table") {
  const std::pair<const char*, const char*> specs[] = {
      {"x, (y", "expected"}, {"P('x'", "expected"}, {"x,,y", "expected"},
      {"'x", "expected"},    {"x y", "expected"},   {"(x, x)", "x"},
  };
  for (const auto& [text, fragment] : specs) {
    const char* spec = text;  // a lambda capturing a structured binding is C++20 (nvcc warns)
    const std::string msg = darray::testing::error_message<InvalidArgument>([&] { (void)PartitionSpec::parse(spec); });
    INFO("PartitionSpec::parse(\"" << text << "\") -> " << msg);
    CHECK(msg.find("PartitionSpec") != std::string::npos);
    CHECK(msg.find(fragment) != std::string::npos);
  }
  CHECK_THROWS_WITH(detail::parse_int("--sizes", "12a", 1, 100, "1..100"), Catch::Contains("\"12a\""));
  CHECK_THROWS_WITH(detail::parse_int_list("ids", "1,,2", 0, 9, "ids"), Catch::Contains("\"1,,2\""));
}
