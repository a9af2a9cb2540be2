// A deterministic mutation fuzzer for the .npy header parser that runs in every build: valid headers get thousands
// of random byte flips, truncations, insertions, deletions and length-field lies (fixed seed, time bound), and the
// parser must return a sane header or throw darray::IoError; never crash, never throw anything else. Each input is
// a vector sized exactly to it, so this target's AddressSanitizer build catches any read past the buffer.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "darray/io/detail/npy_header.hpp"

using namespace darray;

namespace {

using Bytes = std::vector<unsigned char>;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::vector<Bytes> seed_headers() {
  using detail::format_npy_header;
  std::vector<Bytes> seeds;
  for (const std::string& h :
       {format_npy_header("<f8", {3, 4}), format_npy_header("|u1", {5}), format_npy_header("<c8", {}),
        format_npy_header("<i4", {0, 7}), format_npy_header("<f4", {2, 3}, true),
        format_npy_header("<c16", {1, 2, 3, 4, 5, 6, 7, 8}), format_npy_header("<i8", {int64_t(1) << 40})})
    seeds.push_back(bytes_of(h));
  // Hand-written variants numpy also reads: double quotes, other key order, Python 2 longs, versions 2.0 and 3.0
  // (a real 2.0 header needs 64 KiB; the parser does not care, and small inputs keep the fuzzer fast).
  const std::string dict = "{\"shape\": (10L, 2), 'fortran_order': False, 'descr': '>i2'}  \n";
  std::string v1("\x93NUMPY\x01\x00", 8);
  v1 += static_cast<char>(dict.size());
  v1 += '\0';
  seeds.push_back(bytes_of(v1 + dict));
  for (const char major : {'\x02', '\x03'}) {
    std::string v("\x93NUMPY", 6);
    v += major;
    v += '\0';
    v += static_cast<char>(dict.size());
    v += std::string(3, '\0');
    seeds.push_back(bytes_of(v + dict));
  }
  return seeds;
}

// Tokens that steer mutations towards the parser's interesting states.
const std::vector<std::string>& tokens() {
  static const std::vector<std::string> t{"(",
                                          ")",
                                          "[",
                                          "]",
                                          "{",
                                          "}",
                                          "'",
                                          "\"",
                                          ",",
                                          ":",
                                          "-",
                                          "L",
                                          "\\",
                                          "\n",
                                          "True",
                                          "None",
                                          "0",
                                          "()",
                                          "(,)",
                                          "99999999999999999999",
                                          "'descr'",
                                          "'shape'",
                                          "'fortran_order'",
                                          std::string(1, '\0'),
                                          "((((((((((((((((((((((((((((((((((((((("};
  return t;
}

Bytes mutate(const Bytes& seed, std::mt19937_64& rng) {
  Bytes b = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t n = b.size();
    const auto at = [&](std::size_t bound) { return bound == 0 ? 0 : static_cast<std::size_t>(rng() % bound); };
    switch (rng() % 9) {
      case 0:  // random byte
        if (n > 0) b[at(n)] = static_cast<unsigned char>(rng());
        break;
      case 1:  // bit flip
        if (n > 0) b[at(n)] ^= static_cast<unsigned char>(1u << (rng() % 8));
        break;
      case 2:  // truncation
        b.resize(at(n + 1));
        break;
      case 3: {  // random bytes inserted
        const std::size_t pos = at(n + 1);
        const std::size_t len = 1 + at(8);
        Bytes ins(len);
        for (auto& c : ins) c = static_cast<unsigned char>(rng());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), ins.begin(), ins.end());
        break;
      }
      case 4: {  // token inserted or overwriting
        const std::string& tok = tokens()[at(tokens().size())];
        const std::size_t pos = at(n + 1);
        if (rng() % 2)
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), tok.begin(), tok.end());
        else
          for (std::size_t i = 0; i < tok.size() && pos + i < b.size(); ++i)
            b[pos + i] = static_cast<unsigned char>(tok[i]);
        break;
      }
      case 5: {  // range deleted
        if (n == 0) break;
        const std::size_t pos = at(n);
        const std::size_t len = 1 + at(std::min<std::size_t>(n - pos, 16));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos), b.begin() + static_cast<std::ptrdiff_t>(pos + len));
        break;
      }
      case 6: {  // range duplicated
        if (n == 0) break;
        const std::size_t pos = at(n);
        const std::size_t len = 1 + at(std::min<std::size_t>(n - pos, 24));
        const Bytes dup(b.begin() + static_cast<std::ptrdiff_t>(pos),
                        b.begin() + static_cast<std::ptrdiff_t>(pos + len));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), dup.begin(), dup.end());
        break;
      }
      case 7: {  // the length field lies: off by a little, zero, or huge
        if (n < 12) break;
        static const uint32_t lies[] = {0, 1, 0xffff, 0x10000, 0x7fffffff, 0xffffffff};
        uint32_t len = b[8] | (b[9] << 8);
        len = rng() % 2 ? lies[rng() % 6] : len + static_cast<uint32_t>(rng() % 9) - 4;
        for (int i = 0; i < 4; ++i) b[8 + i] = static_cast<unsigned char>(len >> (8 * i));
        break;
      }
      case 8:  // version bytes
        if (n > 7) b[6 + at(2)] = static_cast<unsigned char>(rng() % 5);
        break;
    }
  }
  return b;
}

}  // namespace

TEST_CASE("mutated headers parse or throw IoError, never anything else", "[fuzz]") {
  const std::vector<Bytes> seeds = seed_headers();
  for (const Bytes& s : seeds) REQUIRE_NOTHROW(detail::parse_npy_header(s, "fuzz", "seed"));

  std::mt19937_64 rng(20240611);
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::seconds(3);
  constexpr long min_runs = 20000, max_runs = 400000;
  long runs = 0, accepted = 0, rejected = 0;
  std::string failure;
  for (; runs < max_runs && failure.empty(); ++runs) {
    if (runs >= min_runs && runs % 1024 == 0 && std::chrono::steady_clock::now() - start > budget) break;
    // Mutants of mutants reach deeper states than single edits of the seeds.
    Bytes input = mutate(seeds[static_cast<std::size_t>(rng() % seeds.size())], rng);
    if (rng() % 3 == 0) input = mutate(input, rng);
    const Bytes exact(input.begin(), input.end());  // capacity == size: nothing readable past the end
    try {
      const io::NpyHeader h = detail::parse_npy_header(exact, "fuzz", "input");
      ++accepted;
      bool sane = h.data_offset <= exact.size() && !h.dtype.empty() && h.version_minor == 0 && h.version_major >= 1 &&
                  h.version_major <= 3 && h.shape.size() <= detail::npy_max_dims;
      for (int64_t n : h.shape) sane = sane && n >= 0;
      if (!sane) failure = "accepted an insane header: " + detail::printable_bytes(exact.data(), exact.size(), 400);
    } catch (const IoError& e) {
      ++rejected;
      if (std::string(e.what()).find("\"input\"") == std::string::npos)
        failure = std::string("IoError without the file name: ") + e.what();
    } catch (const std::exception& e) {
      failure = std::string("threw ") + typeid(e).name() + " (" + e.what() + ") for " +
                detail::printable_bytes(exact.data(), exact.size(), 400);
    }
  }
  INFO(runs << " mutants: " << accepted << " accepted, " << rejected << " rejected");
  REQUIRE(failure.empty());
  CHECK(runs >= min_runs);
  // The mutations must reach both outcomes, or the fuzzer is not exercising the parser.
  CHECK(accepted > runs / 500);
  CHECK(rejected > runs / 2);
}
