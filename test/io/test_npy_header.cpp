// The pure parts of the io layer, no MPI: the header writer against numpy's own bytes, the parser on valid and
// malformed headers (every bad case names what is wrong), dtype checks of load_npy, and the file-piece planner
// (pieces tile the block, land at the right file bytes, and keep every MPI count and extent within int).
#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "darray/io/detail/file_pieces.hpp"
#include "darray/io/detail/npy_dtype.hpp"
#include "darray/io/detail/npy_header.hpp"

using namespace darray;
using darray::detail::format_npy_header;

namespace {

std::vector<unsigned char> bytes_of(const std::string& s) { return std::vector<unsigned char>(s.begin(), s.end()); }

io::NpyHeader parse(const std::string& s) {
  const auto b = bytes_of(s);  // sized exactly: a sanitizer build catches any read past the input
  return detail::parse_npy_header(b, "io::test", "t.npy");
}

// A version 1.0 file start around an arbitrary header text (no padding added).
std::string v1(const std::string& dict) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

std::string with_version(int major, const std::string& dict) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < 4; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict;
}

std::string parse_error(const std::string& s) {
  try {
    parse(s);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

#define REQUIRE_BAD_HEADER(bytes, ...)                                                    \
  do {                                                                                    \
    const std::string msg_ = parse_error(bytes);                                          \
    INFO("message: " << msg_);                                                            \
    REQUIRE(!msg_.empty());                                                               \
    CHECK(msg_.find("\"t.npy\"") != std::string::npos);                                   \
    for (const char* frag_ : {__VA_ARGS__}) CHECK(msg_.find(frag_) != std::string::npos); \
  } while (false)

TEST_CASE("format_npy_header writes numpy's bytes") {
  // np.save output of numpy 1.24 for these arrays (header part), including its growth-axis spaces and padding.
  const auto numpy_header = [](const std::string& dict, std::size_t spaces) {
    return std::string("\x93NUMPY\x01\x00v\x00", 10) + dict + std::string(spaces, ' ') + "\n";
  };
  CHECK(format_npy_header("<f8", {3, 4}) ==
        numpy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }", 58));
  CHECK(format_npy_header("|u1", {5}) == numpy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 60));
  CHECK(format_npy_header("<c8", {}) == numpy_header("{'descr': '<c8', 'fortran_order': False, 'shape': (), }", 62));
  CHECK(format_npy_header("<i4", {0, 7}) ==
        numpy_header("{'descr': '<i4', 'fortran_order': False, 'shape': (0, 7), }", 58));
  CHECK(format_npy_header("<f8", {2, 3}, true) ==
        numpy_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 59));
  for (const std::string& s :
       {format_npy_header("<f8", {3, 4}), format_npy_header("<f8", {3, 4}), format_npy_header("|u1", {5})})
    CHECK(s.size() == 128);
}

TEST_CASE("headers are 64-byte aligned, end in a newline and parse back") {
  std::mt19937_64 rng(7);
  const std::vector<std::string> dtypes{"<f4", "<f8", "<i4", "<i8", "<c8", "<c16", "|u1", "|i1", "<u4", "<u2"};
  for (int t = 0; t < 500; ++t) {
    Shape shape(rng() % 9);
    // At most one extent up to 2^40 and the others below 8, so the element count stays within int64.
    const bool huge = rng() % 4 == 0;
    for (auto& n : shape) n = static_cast<int64_t>(rng() % (huge ? 8 : 100));
    if (huge && !shape.empty()) shape[rng() % shape.size()] = static_cast<int64_t>(rng() % (int64_t(1) << 40));
    const std::string dtype = dtypes[rng() % dtypes.size()];
    const bool fortran = rng() % 5 == 0;
    const std::string h = format_npy_header(dtype, shape, fortran);
    INFO(h);
    REQUIRE(h.size() % 64 == 0);
    REQUIRE(h.back() == '\n');
    const io::NpyHeader p = parse(h);
    CHECK(p.dtype == dtype);
    CHECK(p.shape == shape);
    CHECK(p.fortran_order == fortran);
    CHECK(p.data_offset == h.size());
    CHECK(p.version_major == 1);
    CHECK(p.version_minor == 0);
  }
}

TEST_CASE("a header beyond 65535 bytes is written as version 2.0") {
  const std::string descr(70000, 'x');
  const std::string h = format_npy_header(descr, {2, 3});
  REQUIRE(h.size() % 64 == 0);
  REQUIRE(static_cast<unsigned char>(h[6]) == 2);
  const io::NpyHeader p = parse(h);
  CHECK(p.version_major == 2);
  CHECK(p.dtype == descr);
  CHECK(p.shape == Shape{2, 3});
  CHECK(p.data_offset == h.size());
  // Quotes and backslashes in the dtype string survive the round trip.
  CHECK(parse(format_npy_header("a'b\\c", {1})).dtype == "a'b\\c");
}

TEST_CASE("the parser reads what numpy reads") {
  // Double quotes, other key order, no trailing comma, odd whitespace.
  io::NpyHeader h = parse(v1("{\"shape\": ( 3 ,\t4 ) ,\n 'descr':\"<i8\", 'fortran_order' : True}\n"));
  CHECK(h.dtype == "<i8");
  CHECK(h.shape == Shape{3, 4});
  CHECK(h.fortran_order);
  // Old numpy padded to 16 bytes and wrote Python 2 long integers.
  const std::string old_style = "{'descr': '<f4', 'fortran_order': False, 'shape': (10L, 2L), }    \n";
  h = parse(v1(old_style));
  CHECK(h.shape == Shape{10, 2});
  CHECK(h.data_offset == 10 + old_style.size());
  // 1-d and 0-d shapes, extents up to 2^63-1 when another is 0.
  CHECK(parse(v1("{'descr':'<f8','fortran_order':False,'shape':(7,)}")).shape == Shape{7});
  CHECK(parse(v1("{'descr':'<f8','fortran_order':False,'shape':()}")).shape == Shape{});
  CHECK(parse(v1("{'descr':'<f8','fortran_order':False,'shape':(0, 9223372036854775807)}")).shape ==
        Shape{0, INT64_MAX});
  // Versions 2.0 and 3.0 (3.0 differs only in the header's encoding).
  const std::string v2_dict = "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }\n";
  h = parse(with_version(2, v2_dict));
  CHECK((h.version_major == 2 && h.dtype == "<c16" && h.data_offset == 12 + v2_dict.size()));
  h = parse(with_version(3, "{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1), }\n"));
  CHECK((h.version_major == 3 && h.shape == Shape{1, 1}));
  // Data after the header is none of the parser's business.
  CHECK(parse(format_npy_header("<f8", {2}) + std::string(16, '\0')).data_offset == 128);
}

TEST_CASE("malformed preambles are IoErrors naming the file and the problem") {
  REQUIRE_BAD_HEADER(std::string("\x89PNG\r\n\x1a\n\0\0", 10), "is not a .npy file", "\\x89PNG");
  REQUIRE_BAD_HEADER("NUMPY\x01", "is not a .npy file");
  REQUIRE_BAD_HEADER("", "truncated: 0 bytes");
  REQUIRE_BAD_HEADER("\x93NUMPY", "truncated: 6 bytes");
  REQUIRE_BAD_HEADER(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "version 4.0",
                     "supported versions are 1.0, 2.0 and 3.0");
  REQUIRE_BAD_HEADER(std::string("\x93NUMPY\x01\x01\x10\x00", 10), "version 1.1");
  REQUIRE_BAD_HEADER(std::string("\x93NUMPY\x00\x00\x10\x00", 10), "version 0.0");
  REQUIRE_BAD_HEADER(std::string("\x93NUMPY\x02\x00\x10\x00", 10),
                     "too short for the header length field of a 2.0 file");
  // Length fields that lie: longer than the buffer, absurdly large.
  std::string h = format_npy_header("<f8", {3, 4});
  h[8] = static_cast<char>(0xff);
  h[9] = static_cast<char>(0x7f);
  REQUIRE_BAD_HEADER(h, "header length field says 32767 bytes, but only 118 bytes follow");
  REQUIRE_BAD_HEADER(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), "says 4294967295 bytes");
  REQUIRE_BAD_HEADER(format_npy_header("<f8", {3, 4}).substr(0, 100), "truncated or corrupt");
}

TEST_CASE("malformed header dicts are IoErrors naming what is wrong") {
  const auto dict = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return v1("{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n");
  };
  REQUIRE_BAD_HEADER(v1("['descr', '<f8']\n"), "the header is a list, not a dict");
  REQUIRE_BAD_HEADER(v1("'descr'\n"), "the header is a string, not a dict");
  REQUIRE_BAD_HEADER(v1("\n"), "expected a value but found the end of the header");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'fortran_order': False}\n"), "missing key 'shape'");
  REQUIRE_BAD_HEADER(v1("{'shape': (1,), 'fortran_order': False}\n"), "missing key 'descr'");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'shape': (1,)}\n"), "missing key 'fortran_order'");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'extra': 1}"),
                     "unexpected key 'extra'");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"),
                     "key 'descr' appears twice");
  REQUIRE_BAD_HEADER(v1("{1: '<f8'}"), "a dict key is an integer");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4}"),
                     "expected ',' or ')' in a tuple but found '}'");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3 4)"), "expected ',' or ')' in a tuple but found '4'");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "[3, 4]"), "'shape' is a list; expected a tuple of integers");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3)"), "'shape' is an integer");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3, -4)"), "'shape' entry 1 is -4");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3, 'a')"), "'shape' entry 1 is a string");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3, 4.5)"), "expected ',' or ')' in a tuple but found '.'");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(99999999999999999999,)"), "'shape' entry 0 is 99999999999999999999");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(4294967296, 4294967296)"), "more than 2^63-1 elements");
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(1,)*70"), "expected ',' or '}' after a dict entry but found '*'");
  REQUIRE_BAD_HEADER(dict("5", "False", "(1,)"), "'descr' is an integer");
  REQUIRE_BAD_HEADER(dict("''", "False", "(1,)"), "'descr' is an empty string");
  REQUIRE_BAD_HEADER(dict("[('a', '<i4')]", "False", "(1,)"), "'descr' is a list, i.e. a structured dtype");
  REQUIRE_BAD_HEADER(dict("'<f8'", "1", "(1,)"), "'fortran_order' is an integer; expected True or False");
  REQUIRE_BAD_HEADER(dict("'<f8'", "false", "(1,)"), "unknown name 'false'");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8"), "unterminated string at byte 10");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8\n', 'fortran_order': False, 'shape': (1,)}"), "line break inside the quotes");
  REQUIRE_BAD_HEADER(v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1,)} x"),
                     "unexpected text after the header dict");
  std::string with_nul = "{'descr': '<f8'";
  with_nul += '\0';
  with_nul += ", 'fortran_order': False, 'shape': (1,)}";
  REQUIRE_BAD_HEADER(v1(with_nul), "expected ',' or '}' after a dict entry but found '\\x00'");
  REQUIRE_BAD_HEADER(v1(std::string(100, '(') + "1" + std::string(100, ')')), "nesting deeper than 32 levels");
  std::string many_dims = "(";
  for (int d = 0; d < 65; ++d) many_dims += "1,";
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", many_dims + ")"), "'shape' has 65 dims; at most 64");
  std::string huge_tuple = "(";
  for (int d = 0; d < 70000; ++d) huge_tuple += "1,";
  REQUIRE_BAD_HEADER(with_version(2, "{'descr': '<f8', 'fortran_order': False, 'shape': " + huge_tuple + ")}"),
                     "more than 65536 values");
  // Every message quotes the header itself, so the user sees what the file says.
  REQUIRE_BAD_HEADER(dict("'<f8'", "False", "(3, -4)"), "of the header {'descr': '<f8', 'fortran_order': False");
}

TEST_CASE("dtype strings of the element types") {
  CHECK(detail::npy_descr<float>() == "<f4");
  CHECK(detail::npy_descr<double>() == "<f8");
  CHECK(detail::npy_descr<int32_t>() == "<i4");
  CHECK(detail::npy_descr<int64_t>() == "<i8");
  CHECK(detail::npy_descr<uint32_t>() == "<u4");
  CHECK(detail::npy_descr<uint16_t>() == "<u2");
  CHECK(detail::npy_descr<int16_t>() == "<i2");
  CHECK(detail::npy_descr<uint64_t>() == "<u8");
  CHECK(detail::npy_descr<uint8_t>() == "|u1");
  CHECK(detail::npy_descr<int8_t>() == "|i1");
  CHECK(detail::npy_descr<Kokkos::complex<float>>() == "<c8");
  CHECK(detail::npy_descr<Kokkos::complex<double>>() == "<c16");
}

namespace {

io::NpyHeader header_of(const std::string& dtype, Shape shape, bool fortran = false) {
  io::NpyHeader h;
  h.dtype = dtype;
  h.shape = std::move(shape);
  h.fortran_order = fortran;
  h.data_offset = 128;
  return h;
}

template <class Error, class T, int N>
std::string match_error(const io::NpyHeader& h) {
  try {
    detail::check_npy_matches<T, N>(h, "io::load_npy", "t.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("load_npy's dtype, rank and order checks name both sides") {
  CHECK(match_error<Error, double, 2>(header_of("<f8", {3, 4})).empty());
  CHECK(match_error<Error, double, 2>(header_of("f8", {3, 4})).empty());  // no byte order: native, as numpy reads it
  CHECK(match_error<Error, uint8_t, 1>(header_of("|u1", {3})).empty());
  CHECK(match_error<Error, uint8_t, 1>(header_of("<u1", {3})).empty());
  CHECK(match_error<Error, int8_t, 1>(header_of(">i1", {3})).empty());  // one byte has no byte order
  CHECK(match_error<Error, Kokkos::complex<float>, 0>(header_of("<c8", {})).empty());

  std::string m = match_error<IoError, float, 2>(header_of("<f8", {3, 4}));
  CHECK(m.find("has dtype '<f8' but io::load_npy<float32, 2> expects '<f4' (float32)") != std::string::npos);
  m = match_error<IoError, int32_t, 1>(header_of("<u4", {3}));
  CHECK(m.find("has dtype '<u4' but io::load_npy<int32, 1> expects '<i4' (int32)") != std::string::npos);
  m = match_error<IoError, double, 1>(header_of("<U10", {3}));
  CHECK(m.find("has dtype '<U10'") != std::string::npos);
  m = match_error<IoError, double, 1>(header_of("|f8", {3}));
  CHECK(m.find("has dtype '|f8'") != std::string::npos);
  m = match_error<IoError, double, 3>(header_of("<f8", {3, 4}));
  CHECK(m.find("has shape (3, 4) (rank 2) but io::load_npy<float64, 3> expects rank 3") != std::string::npos);
  m = match_error<IoError, double, 1>(header_of("<f8", {}));
  CHECK(m.find("has shape () (rank 0)") != std::string::npos);
  m = match_error<NotSupported, double, 2>(header_of(">f8", {3, 4}));
  CHECK(m.find("big-endian data (dtype '>f8')") != std::string::npos);
  m = match_error<NotSupported, double, 2>(header_of("<f8", {3, 4}, true));
  CHECK(m.find("Fortran (column-major) order") != std::string::npos);
}

TEST_CASE("the data must fit in the file") {
  const io::NpyHeader h = header_of("<f8", {3, 4});
  CHECK_NOTHROW(detail::check_npy_data_size(h, 8, 128 + 96, "io::load_npy", "t.npy"));
  CHECK_NOTHROW(detail::check_npy_data_size(h, 8, 128 + 200, "io::load_npy", "t.npy"));  // numpy ignores a tail too
  try {
    detail::check_npy_data_size(h, 8, 128 + 95, "io::load_npy", "t.npy");
    FAIL("no error");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("is truncated: its header announces shape (3, 4) of dtype '<f8', 96 data bytes "
                                     "from offset 128 (224 bytes in all), but the file has 223 bytes") !=
          std::string::npos);
  }
  CHECK_THROWS_AS(detail::check_npy_data_size(header_of("<f8", {INT64_MAX / 2}), 8, 1000, "a", "t"), IoError);
}

namespace {

// The file byte of every byte of a piece, following MPI subarray semantics on the piece's frame, compared with the
// byte the global C-order layout puts there. Returns "" or the first mismatch.
std::string check_piece_bytes(const detail::FilePiece& p, const Shape& shape, const Index& block, int64_t item,
                              std::vector<int>& covered) {
  const Shape gstrides = row_major_strides(shape);
  const Shape bshape = box_shape(block);
  const int64_t bytes = p.count * item;
  Shape fsizes, fsub, fstart;
  for (std::size_t d = 0; d < p.frame_sizes.size(); ++d) {
    fsizes.push_back(p.frame_sizes[d]);
    fsub.push_back(p.frame_subsizes[d]);
    fstart.push_back(p.frame_starts[d]);
  }
  if (!fsizes.empty() && volume(fsub) != bytes) return "frame holds " + std::to_string(volume(fsub)) + " bytes";
  const Shape fstrides = row_major_strides(fsizes);
  for (int64_t j = 0; j < bytes; ++j) {
    int64_t file_byte = p.file_offset;
    if (fsizes.empty()) {
      file_byte += j;
    } else {
      int64_t rest = j;
      for (std::size_t d = fsub.size(); d-- > 0;) {
        file_byte += (fstart[d] + rest % fsub[d]) * fstrides[d];
        rest /= fsub[d];
      }
    }
    const int64_t local = p.memory_offset + j / item;  // block-local flat element
    if (local >= volume(block)) return "memory run passes the block's end";
    int64_t rest = local, flat = 0;
    for (std::size_t d = block.size(); d-- > 0;) {
      flat += (block[d].start + rest % bshape[d]) * gstrides[d];
      rest /= bshape[d];
    }
    if (file_byte != flat * item + j % item)
      return "byte " + std::to_string(j) + " lands at " + std::to_string(file_byte) + ", expected " +
             std::to_string(flat * item + j % item);
    if (j % item == 0) ++covered[static_cast<std::size_t>(local)];
  }
  return "";
}

}  // namespace

TEST_CASE("file pieces tile each block, land on the right bytes and keep MPI counts within int") {
  std::mt19937_64 rng(11);
  int split = 0, framed = 0;
  for (int t = 0; t < 3000; ++t) {
    const std::size_t rank = rng() % 5;
    Shape shape(rank);
    Index block(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      shape[d] = 1 + static_cast<int64_t>(rng() % 9);
      const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(shape[d]));
      const int64_t b = a + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(shape[d] - a));
      block[d] = Slice{a, b};
    }
    const int64_t item = int64_t(1) << (rng() % 5);                   // 1..16 bytes
    const int64_t max_bytes = 1 + static_cast<int64_t>(rng() % 400);  // forces splitting often
    const int64_t max_int = 1 + static_cast<int64_t>(rng() % 60);     // forces the frame constraint often
    const auto pieces = detail::plan_file_pieces(shape, block, item, max_bytes, max_int);
    INFO("shape " << shape_to_string(shape) << " block " << block << " item " << item << " max_bytes " << max_bytes
                  << " max_int " << max_int);
    std::vector<int> covered(static_cast<std::size_t>(volume(block)), 0);
    int64_t next_offset = 0;
    for (const auto& p : pieces) {
      REQUIRE(p.count > 0);
      REQUIRE(p.memory_offset == next_offset);  // in memory order, back to back
      next_offset += p.count;
      REQUIRE(p.count * item <= std::max(max_bytes, item));
      for (std::size_t d = 0; d < p.frame_sizes.size(); ++d) {
        REQUIRE(p.frame_sizes[d] <= std::max<int64_t>(max_int, std::max(max_bytes, item)));
        REQUIRE(p.frame_subsizes[d] >= 1);
        REQUIRE(p.frame_starts[d] + p.frame_subsizes[d] <= p.frame_sizes[d]);
      }
      const std::string err = check_piece_bytes(p, shape, block, item, covered);
      REQUIRE(err.empty());
      framed += p.frame_sizes.empty() ? 0 : 1;
    }
    for (int c : covered) REQUIRE(c == 1);
    split += pieces.size() > 1 ? 1 : 0;
    // Unconstrained, a block is exactly one piece.
    REQUIRE(detail::plan_file_pieces(shape, block, item, INT_MAX, INT_MAX).size() == 1);
  }
  CHECK(split > 500);
  CHECK(framed > 500);
  CHECK(detail::plan_file_pieces({4, 0}, {Slice{0, 4}, Slice{0, 0}}, 8, 100).empty());
  const auto scalar = detail::plan_file_pieces({}, {}, 16, 100);
  REQUIRE(scalar.size() == 1);
  CHECK((scalar[0].count == 1 && scalar[0].file_offset == 0 && scalar[0].frame_sizes.empty()));
}

TEST_CASE("huge arrays stay within MPI's int limits") {
  // A 1-d block of 6e9 doubles (48 GB) and a row block of a 3 x 3e9 array whose last dim alone exceeds INT_MAX.
  const int64_t big = 6'000'000'000;
  auto pieces = detail::plan_file_pieces({big}, {Slice{1000, big}}, 8, INT_MAX / 64 * 64);
  int64_t total = 0;
  for (const auto& p : pieces) {
    REQUIRE(p.frame_sizes.empty());
    REQUIRE(p.count * 8 <= INT_MAX);
    REQUIRE(p.file_offset == (1000 + p.memory_offset) * 8);
    total += p.count;
  }
  CHECK(total == big - 1000);
  CHECK(pieces.size() == 23);
  pieces = detail::plan_file_pieces({3, 3'000'000'000}, {Slice{1, 3}, Slice{5, 2'500'000'000}}, 4, INT_MAX / 64 * 64);
  total = 0;
  for (const auto& p : pieces) {
    REQUIRE(p.frame_sizes.empty());  // each piece is a run of one row
    REQUIRE(p.count * 4 <= INT_MAX);
    total += p.count;
  }
  CHECK(total == 2 * (2'500'000'000 - 5));
  // Blocks of a 2-d array with a modest last dim keep a subarray frame with int extents.
  pieces = detail::plan_file_pieces({600'000, 5000}, {Slice{0, 600'000}, Slice{2500, 5000}}, 8, INT_MAX / 64 * 64);
  CHECK(pieces.size() == 6);
  for (const auto& p : pieces) {
    REQUIRE(p.frame_sizes.size() == 2);
    CHECK(p.frame_sizes[1] == 5000 * 8);
    CHECK(p.frame_subsizes[1] == 2500 * 8);
    CHECK(p.frame_starts[1] == 2500 * 8);
    CHECK(static_cast<int64_t>(p.frame_sizes[0]) * 2500 * 8 <= INT_MAX);
  }
}
