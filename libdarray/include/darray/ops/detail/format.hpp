// NumPy's text form of an array (numpy.array2string as str(a) uses it, NumPy >= 1.14 defaults): the element
// formatters (FloatingFormat with floatmode "maxprec", precision 8; IntegerFormat; ComplexFloatingFormat) and
// _formatArray's line wrapping at 75 columns with "..." summaries. Pure host code over the gathered elements.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/array/dtype.hpp"

namespace darray {
namespace detail {

// The shortest "%.{p}f" (positional) or "%.{p}e" (scientific), p <= precision, that reads back as x in R; else p =
// precision. This is dragon4's "unique" mode capped at precision digits.
template <class R>
std::string shortest(R x, bool scientific, int precision) {
  char buf[512];
  for (int p = 0; p <= precision; ++p) {
    std::snprintf(buf, sizeof buf, scientific ? "%.*e" : "%.*f", p, static_cast<double>(x));
    if (static_cast<R>(std::strtod(buf, nullptr)) == x) break;
  }
  return buf;
}

// numpy's FloatingFormat for a set of values (those printed), sign '-' or '+'.
template <class R>
class FloatFormat {
 public:
  FloatFormat(const std::vector<R>& data, bool plus) : m_plus(plus) {
    std::vector<R> finite;
    for (R x : data)
      if (std::isfinite(x)) finite.push_back(x);
    R max_val = 0, min_val = 0;
    bool any_nonzero = false;
    for (R x : finite)
      if (x != 0) {
        const R ax = std::abs(x);
        max_val = any_nonzero ? std::max(max_val, ax) : ax;
        min_val = any_nonzero ? std::min(min_val, ax) : ax;
        any_nonzero = true;
      }
    if (any_nonzero) m_exp = max_val >= R(1e8) || min_val < R(0.0001) || static_cast<double>(max_val) / min_val > 1000.;
    if (finite.empty()) {
      m_pad_left = m_pad_right = 0;
    } else if (m_exp) {
      for (R x : finite) {
        const Parts p = split(x, 8);
        m_precision = std::max<int>(m_precision, static_cast<int>(p.frac.size()));
        m_exp_digits = std::max<int>(m_exp_digits, static_cast<int>(p.exp.size()) - 1);
        m_pad_left = std::max<int>(m_pad_left, static_cast<int>(p.integer.size()));
      }
      m_pad_right = m_exp_digits + 2 + m_precision;
    } else {
      for (R x : finite) {
        const Parts p = split(x, 8);
        m_pad_left = std::max<int>(m_pad_left, static_cast<int>(p.integer.size()));
        m_pad_right = std::max<int>(m_pad_right, static_cast<int>(p.frac.size()));
      }
    }
    if (finite.size() != data.size()) {
      bool neginf = plus;
      for (R x : data) neginf = neginf || (std::isinf(x) && x < 0);
      const int offset = m_pad_right + 1;
      m_pad_left = std::max({m_pad_left, 3 - offset, 3 + (neginf ? 1 : 0) - offset});
    }
  }

  std::string operator()(R x) const {
    if (!std::isfinite(x)) {
      std::string r = std::isnan(x) ? (m_plus ? "+nan" : "nan") : x < 0 ? "-inf" : (m_plus ? "+inf" : "inf");
      return std::string(static_cast<std::size_t>(std::max(0, m_pad_left + m_pad_right + 1 - int(r.size()))), ' ') + r;
    }
    const Parts p = split(x, m_exp ? m_precision : 8);
    std::string out(static_cast<std::size_t>(std::max(0, m_pad_left - int(p.integer.size()))), ' ');
    out += p.integer + "." + p.frac;
    if (m_exp) {
      out += std::string(static_cast<std::size_t>(m_precision - int(p.frac.size())), '0');
      std::string digits = p.exp.substr(1);  // after the sign
      while (int(digits.size()) < m_exp_digits) digits = "0" + digits;
      out += "e" + p.exp.substr(0, 1) + digits;
    } else {
      out += std::string(static_cast<std::size_t>(m_pad_right - int(p.frac.size())), ' ');
    }
    return out;
  }

 private:
  struct Parts {
    std::string integer, frac, exp;  // exp: sign and digits, "-05" (scientific only)
  };
  // Unique digits of x (at most `precision` after the point), trailing zeros trimmed, split at '.' and 'e'.
  Parts split(R x, int precision) const {
    std::string s = shortest(x, m_exp, precision);
    Parts p;
    if (m_exp) {
      const auto e = s.find('e');
      p.exp = s.substr(e + 1);
      s = s.substr(0, e);
    }
    const auto dot = s.find('.');
    p.integer = dot == std::string::npos ? s : s.substr(0, dot);
    p.frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    while (!p.frac.empty() && p.frac.back() == '0') p.frac.pop_back();
    if (m_plus && p.integer[0] != '-') p.integer = "+" + p.integer;
    return p;
  }

  bool m_plus = false, m_exp = false;
  int m_pad_left = 0, m_pad_right = 0, m_precision = 0, m_exp_digits = 0;
};

// A formatter for the printed elements of type T: a function from one element to its padded text.
template <class T>
std::function<std::string(const T&)> element_format(const std::vector<T>& data) {
  if constexpr (is_kokkos_complex<T>::value) {
    using R = typename T::value_type;
    std::vector<R> re, im;
    for (const T& z : data) {
      re.push_back(z.real());
      im.push_back(z.imag());
    }
    FloatFormat<R> fr(re, false), fi(im, true);
    return [fr, fi](const T& z) {
      std::string i = fi(z.imag());
      const auto end = i.find_last_not_of(' ') + 1;
      return fr(z.real()) + i.substr(0, end) + "j" + i.substr(end);
    };
  } else if constexpr (std::is_floating_point<T>::value) {
    FloatFormat<T> f(data, false);
    return [f](const T& x) { return f(x); };
  } else {
    std::size_t width = 0;
    for (const T& x : data) width = std::max(width, std::to_string(x).size());
    return [width](const T& x) {
      const std::string s = std::to_string(x);
      return std::string(width - s.size(), ' ') + s;
    };
  }
}

// A rank-0 array prints as its scalar does in Python: repr of the float ("2.0", "1e-05"), "(1+2j)", "7".
template <class T>
std::string scalar_string(const T& x) {
  if constexpr (is_kokkos_complex<T>::value) {
    std::string im = scalar_string(x.imag());
    if (im.size() > 2 && im.compare(im.size() - 2, 2, ".0") == 0) im.resize(im.size() - 2);
    std::string re = scalar_string(x.real());
    if (re.size() > 2 && re.compare(re.size() - 2, 2, ".0") == 0) re.resize(re.size() - 2);
    return "(" + re + (std::signbit(x.imag()) || std::isnan(x.imag()) ? "" : "+") + im + "j)";
  } else if constexpr (std::is_floating_point<T>::value) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    char buf[64];
    for (int p = 1; p <= 17; ++p) {
      std::snprintf(buf, sizeof buf, "%.*g", p, static_cast<double>(x));
      if (static_cast<T>(std::strtod(buf, nullptr)) == x) break;
    }
    std::string s = buf;
    const auto e = s.find('e');
    const int exponent = x == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::abs(static_cast<double>(x)))));
    if (e == std::string::npos && exponent >= 16) {
      std::snprintf(buf, sizeof buf, "%.16e", static_cast<double>(x));
      s = buf;
    }
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  } else {
    return std::to_string(x);
  }
}

// numpy's _formatArray over the printed elements `sel` (row-major over sel_shape). shape: the array's; a dim longer
// than 2 * edge is summarised when `summary`, and then sel holds its first and last `edge` entries only.
template <class T>
std::string format_array(const std::vector<T>& sel, const std::vector<int64_t>& sel_shape,
                         const std::vector<int64_t>& shape, bool summary, int64_t edge, int line_width) {
  const auto fmt = element_format(sel);
  const int ndim = static_cast<int>(shape.size());
  const std::string separator = " ";
  auto extend_line = [](std::string& s, std::string& line, const std::string& word, int width,
                        const std::string& prefix) {
    bool wrap = static_cast<int>(line.size() + word.size()) > width;
    if (line.size() <= prefix.size()) wrap = false;
    if (wrap) {
      const auto end = line.find_last_not_of(' ');
      s += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
      line = prefix;
    }
    line += word;
  };
  // sel strides
  std::vector<int64_t> stride(static_cast<std::size_t>(ndim), 1);
  for (int d = ndim - 2; d >= 0; --d)
    stride[static_cast<std::size_t>(d)] =
        stride[static_cast<std::size_t>(d) + 1] * sel_shape[static_cast<std::size_t>(d) + 1];
  std::function<std::string(int, int64_t, const std::string&, int)> rec = [&](int axis, int64_t offset,
                                                                              const std::string& hanging, int width) {
    if (axis == ndim) return fmt(sel[static_cast<std::size_t>(offset)]);
    const auto u = static_cast<std::size_t>(axis);
    const std::string next_hanging = hanging + " ";
    const int next_width = width - 1;
    const int64_t len = shape[u], sel_len = sel_shape[u];
    const bool show_summary = summary && 2 * edge < len;
    const int64_t leading = show_summary ? edge : 0, trailing = show_summary ? edge : len;
    // Element i from the start (i >= 0) or -i from the end, as an offset into sel.
    auto at = [&](int64_t i) { return offset + (i >= 0 ? i : sel_len + i) * stride[u]; };
    std::string s;
    const int axes_left = ndim - axis;
    if (axes_left == 1) {
      const int elem_width = width - 1;  // max(len(separator.rstrip()), len(']'))
      std::string line = hanging;
      for (int64_t i = 0; i < leading; ++i) {
        extend_line(s, line, rec(axis + 1, at(i), next_hanging, next_width), elem_width, hanging);
        line += separator;
      }
      if (show_summary) {
        extend_line(s, line, "...", elem_width, hanging);
        line += separator;
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend_line(s, line, rec(axis + 1, at(-i), next_hanging, next_width), elem_width, hanging);
        line += separator;
      }
      extend_line(s, line, rec(axis + 1, at(-1), next_hanging, next_width), elem_width, hanging);
      s += line;
    } else {
      const std::string line_sep = "\n" + std::string(static_cast<std::size_t>(axes_left - 2), '\n');
      for (int64_t i = 0; i < leading; ++i) s += hanging + rec(axis + 1, at(i), next_hanging, next_width) + line_sep;
      if (show_summary) s += hanging + "..." + line_sep;
      for (int64_t i = trailing; i > 1; --i) s += hanging + rec(axis + 1, at(-i), next_hanging, next_width) + line_sep;
      s += hanging + rec(axis + 1, at(-1), next_hanging, next_width);
    }
    return "[" + s.substr(hanging.size()) + "]";
  };
  return rec(0, 0, " ", line_width);
}

}  // namespace detail
}  // namespace darray
