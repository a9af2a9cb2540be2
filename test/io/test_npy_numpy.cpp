// numpy as the oracle: files save_npy writes at 1-4 processes are loaded by np.load (also memory-mapped) and
// compared exactly, and byte for byte with np.save's own file; files np.save writes (format 1.0, 2.0, 3.0) are
// loaded into uneven shardings and compared exactly; numpy's Fortran-order and big-endian files are refused
// clearly. numpy runs on process 0 (DARRAY_NUMPY_PYTHON), its verdict broadcast to all.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;
using darray::testing::TempDir;

namespace {

std::string py_shape(const Shape& shape) { return numpy_shape_string(shape); }

// One file for numpy to check: written by save_npy, compared with the numpy-computed expectation.
struct Written {
  std::string name;
  std::string dtype;  // numpy name
  Shape shape;
};

template <class T, int N>
Written save(const TempDir& dir, const std::string& name, const Shape& shape, const NamedSharding& s) {
  io::save_npy(dir.file(name), darray::testing::make_test_array<T, N>(shape, s));
  return Written{name, dtype_name<T>(), shape};
}

template <class T, int N>
std::string load_and_check(const TempDir& dir, const std::string& name, const Shape& shape, const NamedSharding& s) {
  const auto a = io::load_npy<T, N>(dir.file(name), s);
  const std::string err = darray::testing::check_loaded(a, shape, s);
  return err.empty() ? "" : name + " loaded as " + s.to_string() + ": " + err;
}

}  // namespace

TEST_CASE("numpy loads what save_npy writes, and load_npy reads what numpy writes") {
  TempDir dir;
  const int64_t n = device_count();
  const auto [a, b] = darray::testing::two_axes(n);
  const Mesh line = make_mesh({n}, {"x"});
  const Mesh grid = make_mesh({a, b}, {"a", "b"});

  // 1. C++ writes, sharded in every way; numpy checks.
  std::vector<Written> written;
  written.push_back(save<float, 2>(dir, "f4.npy", {7, 5}, NamedSharding(grid, P{"a", "b"})));
  written.push_back(save<double, 3>(dir, "f8.npy", {3, 4, 5}, NamedSharding(grid, P{"a", none, "b"})));
  written.push_back(save<int32_t, 1>(dir, "i4.npy", {13}, NamedSharding(line, P{"x"})));
  written.push_back(save<int64_t, 4>(dir, "i8.npy", {2, 3, 2, 3}, NamedSharding(grid, P{none, "b", "a"})));
  written.push_back(save<Kokkos::complex<float>, 2>(dir, "c8.npy", {6, 7}, NamedSharding(grid, P{"b", "a"})));
  written.push_back(save<Kokkos::complex<double>, 1>(dir, "c16.npy", {5}, NamedSharding(line, P{"x"})));
  written.push_back(save<uint8_t, 2>(dir, "u1.npy", {17, 3}, NamedSharding(grid, P{"a"})));
  written.push_back(save<int8_t, 1>(dir, "i1.npy", {200}, NamedSharding(line, P{"x"})));
  written.push_back(save<uint32_t, 0>(dir, "u4.npy", {}, NamedSharding(line, P{})));
  written.push_back(save<int16_t, 2>(dir, "i2.npy", {4, 0}, NamedSharding(grid, P{"a", "b"})));
  written.push_back(save<uint16_t, 2>(dir, "u2.npy", {3, 11}, NamedSharding(grid, P{none, axes("a", "b")})));

  // 2. numpy writes these; C++ loads them below with uneven shardings.
  std::ostringstream py;
  py << "import io, sys\nimport numpy as np\nfrom numpy.lib import format as fmt\n"
     << "d = '" << dir.path() << "/'\nbad = []\n"
     << "def expect(dtype, shape):\n"
     << "    a = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)\n"
     << "    return {\n";
  for (const char* t : {"float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                        "complex64", "complex128"})
    py << "        '" << t << "': lambda: " << darray::testing::npy_value_expr(t) << ",\n";
  py << "    }[dtype]()\n"
     << "def check(name, dtype, shape):\n"
     << "    want = expect(dtype, shape)\n"
     << "    for mode in (None, 'r'):\n"
     << "        got = np.load(d + name, mmap_mode=mode)\n"
     << "        if got.dtype != want.dtype or got.shape != want.shape or not got.flags.c_contiguous:\n"
     << "            bad.append('%s: got %s %s, want %s %s' % (name, got.dtype, got.shape, want.dtype, want.shape))\n"
     << "        elif not np.array_equal(got, want):\n"
     << "            bad.append('%s: values differ (mmap_mode=%s)' % (name, mode))\n"
     << "    # numpy of this era pads headers for a growing axis; then the files must be identical to np.save's.\n"
     << "    if hasattr(fmt, 'GROWTH_AXIS_MAX_DIGITS'):\n"
     << "        buf = io.BytesIO()\n"
     << "        np.save(buf, want)\n"
     << "        if open(d + name, 'rb').read() != buf.getvalue():\n"
     << "            bad.append('%s: bytes differ from np.save' % name)\n";
  for (const Written& w : written)
    py << "check('" << w.name << "', '" << w.dtype << "', " << py_shape(w.shape) << ")\n";
  py << "def put(name, dtype, shape, version=None, order='C'):\n"
     << "    a = expect(dtype, shape)\n"
     << "    with open(d + name, 'wb') as f:\n"
     << "        fmt.write_array(f, np.asarray(a, order=order), version=version)\n"
     << "put('np_f8.npy', 'float64', (7, 5))\n"
     << "put('np_i4.npy', 'int32', (13,))\n"
     << "put('np_c16.npy', 'complex128', (3, 4, 5))\n"
     << "put('np_f4_v2.npy', 'float32', (5, 6), version=(2, 0))\n"
     << "put('np_c8_v3.npy', 'complex64', (2, 9), version=(3, 0))\n"
     << "put('np_i8_0d.npy', 'int64', ())\n"
     << "put('np_u1_empty.npy', 'uint8', (0, 3))\n"
     << "put('np_i1.npy', 'int8', (9, 2))\n"
     << "put('np_u8.npy', 'uint64', (2, 3, 2, 2))\n"
     << "put('np_fortran.npy', 'float64', (3, 4), order='F')\n"
     << "np.save(d + 'np_big.npy', expect('float64', (3, 4)).astype('>f8'))\n"
     << "if bad:\n    print('numpy found problems:\\n  ' + '\\n  '.join(bad))\n    sys.exit(1)\n"
     << "print('numpy: %d files written by libdarray load exactly' % " << written.size() << ")\n";
  if (darray::testing::world_rank() == 0) std::ofstream(dir.file("oracle.py")) << py.str();
  const int rc = darray::testing::system_on_root(std::string(DARRAY_NUMPY_PYTHON) + " " + dir.file("oracle.py"));
  INFO("numpy exit status " << rc << " (its findings are printed above)");
  REQUIRE(all_ok(rc == 0));

  // 3. Files from numpy, into shardings whose blocks are uneven for most device counts.
  std::vector<std::string> errs;
  const NamedSharding ab(grid, P{"a", "b"}), ba(grid, P{"b", "a"}), xs(line, P{"x"});
  errs.push_back(load_and_check<double, 2>(dir, "np_f8.npy", {7, 5}, ab));
  errs.push_back(load_and_check<double, 2>(dir, "np_f8.npy", {7, 5}, NamedSharding(grid, P{none, "a"})));
  errs.push_back(load_and_check<int32_t, 1>(dir, "np_i4.npy", {13}, xs));
  errs.push_back(
      load_and_check<Kokkos::complex<double>, 3>(dir, "np_c16.npy", {3, 4, 5}, NamedSharding(grid, P{"b", none, "a"})));
  errs.push_back(load_and_check<float, 2>(dir, "np_f4_v2.npy", {5, 6}, ba));
  errs.push_back(
      load_and_check<Kokkos::complex<float>, 2>(dir, "np_c8_v3.npy", {2, 9}, NamedSharding(grid, P{axes("a", "b")})));
  errs.push_back(load_and_check<int64_t, 0>(dir, "np_i8_0d.npy", {}, NamedSharding(line, P{})));
  errs.push_back(load_and_check<uint8_t, 2>(dir, "np_u1_empty.npy", {0, 3}, ab));
  errs.push_back(load_and_check<int8_t, 2>(dir, "np_i1.npy", {9, 2}, NamedSharding(line, P{"x"})));
  errs.push_back(load_and_check<uint64_t, 4>(dir, "np_u8.npy", {2, 3, 2, 2}, NamedSharding(grid, P{none, "a", "b"})));
  std::string all;
  for (const std::string& e : errs)
    if (!e.empty()) all += e + "\n";
  INFO(all);
  REQUIRE(all_ok(all.empty()));
  DARRAY_REQUIRE_THROWS_ALL(NotSupported, (io::load_npy<double, 2>(dir.file("np_fortran.npy"), ab)),
                            "np_fortran.npy\" is stored in Fortran (column-major) order");
  DARRAY_REQUIRE_THROWS_ALL(NotSupported, (io::load_npy<double, 2>(dir.file("np_big.npy"), ab)),
                            "np_big.npy\" holds big-endian data (dtype '>f8')");
  const io::NpyHeader h = io::read_npy_header(dir.file("np_fortran.npy"));
  REQUIRE(all_ok(h.fortran_order && h.dtype == "<f8" && h.shape == Shape{3, 4}));
}
