// fft::fftfreq and fft::rfftfreq against numpy.fft's values (computed with NumPy 1.24 and pasted here).
#include <catch2/catch.hpp>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;

TEST_CASE("fftfreq and rfftfreq are numpy.fft's") {
  using V = std::vector<double>;
  REQUIRE(fft::fftfreq(8, 0.1) == V{0.0, 1.25, 2.5, 3.75, -5.0, -3.75, -2.5, -1.25});
  REQUIRE(fft::rfftfreq(8, 0.1) == V{0.0, 1.25, 2.5, 3.75, 5.0});
  REQUIRE(fft::fftfreq(9) == V{0.0, 1.0 / 9, 2.0 / 9, 3.0 / 9, 4.0 / 9, -4.0 / 9, -3.0 / 9, -2.0 / 9, -1.0 / 9});
  REQUIRE(fft::rfftfreq(9) == V{0.0, 1.0 / 9, 2.0 / 9, 3.0 / 9, 4.0 / 9});
  REQUIRE(fft::fftfreq(1, 2.0) == V{0.0});
  REQUIRE(fft::fftfreq(2) == V{0.0, -0.5});
  REQUIRE(fft::rfftfreq(2) == V{0.0, 0.5});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fft::fftfreq(0), "darray::fft::fftfreq: n = 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fft::rfftfreq(4, 0.0), "d = 0");
}
