#include <catch2/catch.hpp>
#include <cstdlib>

#include "darray/core/env.hpp"

using darray::InvalidArgument;
using namespace darray::detail;

TEST_CASE("parse_int is strict and names the variable") {
  CHECK(parse_int("V", "42", 1, 100, "1..100") == 42);
  CHECK(parse_int("V", " 7 ", 1, 100, "1..100") == 7);
  for (const char* bad : {"abc", "", "4x", "1.5", "0x10", "-", "99999999999999999999999"}) {
    INFO(bad);
    try {
      parse_int("DARRAY_HOST_DEVICE_COUNT", bad, 1, 64, "an integer from 1 to 64");
      FAIL("accepted " << bad);
    } catch (const InvalidArgument& e) {
      const std::string w = e.what();
      CHECK(w.find("DARRAY_HOST_DEVICE_COUNT") != std::string::npos);
      CHECK(w.find(std::string("\"") + bad + "\"") != std::string::npos);
      CHECK(w.find("an integer from 1 to 64") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(parse_int("V", "0", 1, 64, "1..64"), InvalidArgument);
  CHECK_THROWS_AS(parse_int("V", "-3", 1, 64, "1..64"), InvalidArgument);
  CHECK_THROWS_AS(parse_int("V", "65", 1, 64, "1..64"), InvalidArgument);
}

TEST_CASE("parse_int_list and parse_choice") {
  CHECK(parse_int_list("L", "0,1,3", 0, 7, "ids") == std::vector<int>{0, 1, 3});
  CHECK_THROWS_WITH(parse_int_list("L", "0,0", 0, 7, "ids"), Catch::Contains("appears twice"));
  CHECK_THROWS_AS(parse_int_list("L", "0,,1", 0, 7, "ids"), InvalidArgument);
  CHECK_THROWS_AS(parse_int_list("L", "", 0, 7, "ids"), InvalidArgument);
  CHECK(parse_choice("B", "nccl", {"mpi", "nccl"}) == "nccl");
  CHECK_THROWS_WITH(parse_choice("DARRAY_BACKEND", "gloo", {"mpi", "nccl"}),
                    Catch::Contains("DARRAY_BACKEND") && Catch::Contains("\"gloo\"") && Catch::Contains("mpi|nccl"));
}

TEST_CASE("env_int and env_bool read the environment") {
  ::setenv("DARRAY_TEST_INT", "5", 1);
  CHECK(env_int("DARRAY_TEST_INT", 1, 1, 10, "1..10") == 5);
  ::unsetenv("DARRAY_TEST_INT");
  CHECK(env_int("DARRAY_TEST_INT", 3, 1, 10, "1..10") == 3);
  ::setenv("DARRAY_TEST_INT", "", 1);
  CHECK_THROWS_AS(env_int("DARRAY_TEST_INT", 3, 1, 10, "1..10"), InvalidArgument);
  ::unsetenv("DARRAY_TEST_INT");
  ::setenv("DARRAY_TEST_BOOL", "1", 1);
  CHECK(env_bool("DARRAY_TEST_BOOL", false));
  ::setenv("DARRAY_TEST_BOOL", "maybe", 1);
  CHECK_THROWS_AS(env_bool("DARRAY_TEST_BOOL", false), InvalidArgument);
  ::unsetenv("DARRAY_TEST_BOOL");
  CHECK_FALSE(env_bool("DARRAY_TEST_BOOL", false));
}

TEST_CASE("split_words splits at blanks, tabs and line ends") {
  CHECK(split_words("  fftw-3.3.10 fftw_wisdom\t#x1\n#x2 ") ==
        std::vector<std::string>{"fftw-3.3.10", "fftw_wisdom", "#x1", "#x2"});
  CHECK(split_words("one") == std::vector<std::string>{"one"});
  CHECK(split_words("").empty());
  CHECK(split_words(" \t\r\n").empty());
}
