// Wisdom: what measured planning learnt, kept so that later plans (in this run or the next) need not measure again.
// Two kinds live in one text file, a sequence of s-expressions: FFTW's own wisdom (one per precision, as
// fftw_export_wisdom_to_string writes it) and darray's choice of local strategy per plan stage,
// "(darray-fft-wisdom 1 (KEY STRATEGY LEVEL) ...)". Sections are kept canonical (entries sorted, one per line), so
// merging the wisdom of several processes and telling whether anything new was learnt are set operations.
#pragma once

#include "darray/config.hpp"

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "darray/comm/check.hpp"
#include "darray/comm/detail/file_replace.hpp"
#include "darray/core/env.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/fftw.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/runtime/log.hpp"

namespace darray {
namespace fft {

// What load_wisdom found (the same on every process).
enum class WisdomStatus {
  loaded,    // imported
  missing,   // no such file: nothing imported, plans are measured as without wisdom
  rejected,  // corrupt, truncated or written by another FFTW build: ignored (a warning says why)
};

inline const char* to_string(WisdomStatus s) {
  return s == WisdomStatus::loaded ? "loaded" : s == WisdomStatus::missing ? "missing" : "rejected";
}

struct WisdomReport {
  WisdomStatus status = WisdomStatus::missing;
  std::string message;  // one line for logs and Plan::describe()
};

namespace detail {

using darray::detail::agree_on_error;
using darray::detail::bcast_string;
using darray::detail::capture_error;
using darray::detail::CapturedError;
using darray::detail::quoted_path;
using darray::detail::read_whole_file;
using darray::detail::write_whole_file;

// darray's choice for one plan stage: a strategy name (see Strategy) and the planner level that measured it
// (1 measure, 2 patient), so an estimate or measure plan may use what a patient one found, not the reverse.
struct Choice {
  std::string strategy;
  int level = 0;
};

inline std::mutex& choices_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<std::string, Choice>& choice_table() {
  static std::map<std::string, Choice> table;
  return table;
}
// What load_wisdom imported since the last forget (choices_mutex): whole file texts, and FFTW sections. Every FFTW
// import costs about 0.2 ms however little it holds (FFTW checksums its whole solver configuration each time), more
// than an estimate plan, and every plan naming Options::wisdom_file loads the file again: so a text or section
// imported since the last forget is not imported again. The record assumes wisdom is forgotten through darray
// (fft::forget_wisdom); after a direct fftw_forget_wisdom, plans measure again instead of using the file.
inline std::map<std::string, std::size_t>& imported_texts() {  // each with its count of kept sections (below)
  static std::map<std::string, std::size_t> texts;
  return texts;
}
inline std::set<std::string>& imported_sections() {
  static std::set<std::string> sections;
  return sections;
}
// FFTW sections of files loaded since the last forget that this FFTW refused as written under another solver
// configuration (same version, another checksum of the registered solvers: FFTW-MPI or threads set up in one program
// and not the other, another CPU's SIMD), kept as read so that saving writes them back beside this process's own
// (choices_mutex).
inline std::set<std::string>& kept_sections() {
  static std::set<std::string> sections;
  return sections;
}

// The recorded choice for key if one was measured at `level` or above.
inline bool find_choice(const std::string& key, int level, Choice* out) {
  std::lock_guard<std::mutex> lock(choices_mutex());
  const auto& t = choice_table();
  const auto it = t.find(key);
  if (it == t.end() || it->second.level < level) return false;
  *out = it->second;
  return true;
}
inline void record_choice(const std::string& key, const Choice& c) {
  std::lock_guard<std::mutex> lock(choices_mutex());
  Choice& slot = choice_table()[key];
  if (c.level >= slot.level) slot = c;
}

// One top-level s-expression: the header (text before the first child) and the children, each kept verbatim.
struct Section {
  std::string header;
  std::vector<std::string> children;
};

// Splits text into sections of depth-2 s-expressions. False (and why) for unbalanced parentheses, text outside the
// sections, or a third nesting level (FFTW writes none).
inline bool split_sections(const std::string& text, std::vector<Section>* out, std::string* why) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    if (text[i] != '(') {
      *why = "unexpected text at byte " + std::to_string(i) + " (expected \"(\")";
      return false;
    }
    Section s;
    std::size_t j = i + 1;
    while (j < n && text[j] != '(' && text[j] != ')') ++j;
    s.header = darray::detail::trim(text.substr(i + 1, j - i - 1));
    for (;;) {
      while (j < n && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j >= n) {
        *why = "unbalanced parentheses: the file ends inside a section (truncated?)";
        return false;
      }
      if (text[j] == ')') break;
      if (text[j] != '(') {
        *why = "unexpected text at byte " + std::to_string(j) + " inside a section";
        return false;
      }
      std::size_t k = j + 1;
      while (k < n && text[k] != ')' && text[k] != '(') ++k;
      if (k >= n || text[k] == '(') {
        *why = k >= n ? "unbalanced parentheses: the file ends inside an entry (truncated?)"
                      : "an entry nests parentheses at byte " + std::to_string(k);
        return false;
      }
      s.children.push_back(text.substr(j, k + 1 - j));
      j = k + 1;
    }
    if (s.header.empty()) {
      *why = "a section without a header at byte " + std::to_string(i);
      return false;
    }
    out->push_back(std::move(s));
    i = j + 1;
  }
  if (out->empty()) {
    *why = "it holds no wisdom (empty)";
    return false;
  }
  return true;
}

// Canonical text of a section: header, children sorted and unique, one per line, as FFTW prints its own.
inline std::string format_section(const std::string& header, std::vector<std::string> children) {
  std::sort(children.begin(), children.end());
  children.erase(std::unique(children.begin(), children.end()), children.end());
  std::size_t bytes = header.size() + 4;
  for (const std::string& c : children) bytes += c.size() + 3;
  std::string s;
  s.reserve(bytes);
  s.append("(").append(header).append("\n");
  for (const std::string& c : children) s.append("  ").append(c).append("\n");
  return s.append(")\n");
}

inline constexpr const char* darray_header = "darray-fft-wisdom 1";

// Keys and strategies are single tokens: no blanks, quotes or parentheses.
inline std::string wisdom_token(const std::string& s) {
  std::string t = s;
  for (char& c : t)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == '"' || c == '\'') c = '_';
  return t;
}

// Reads "(KEY STRATEGY LEVEL)". Without iostreams: the first plan of a run that loads wisdom pays for every line of
// code it runs for the first time (bench-fft-first-plan), and an istringstream's first use costs about 10 us.
inline bool parse_choice(const std::string& child, std::string* key, Choice* c) {
  const std::vector<std::string> words = darray::detail::split_words(child.substr(1, child.size() - 2));
  if (words.size() != 3 || (words[2] != "1" && words[2] != "2")) return false;
  *key = words[0];
  c->strategy = words[1];
  c->level = words[2][0] - '0';
  return true;
}

inline std::string format_choice(const std::string& key, const Choice& c) {
  return "(" + key + " " + c.strategy + " " + std::to_string(c.level) + ")";
}

// FFTW's side, per precision: export, import, forget, under the planner mutex. A build without FFTW has none.
#if defined(DARRAY_HAS_FFTW)
template <class R>
struct FftwWisdom;
#define DARRAY_FFTW_WISDOM(R, X, NAME)                        \
  template <>                                                 \
  struct FftwWisdom<R> {                                      \
    static constexpr const char* name = NAME;                 \
    static std::string exported() {                           \
      std::lock_guard<std::mutex> lock(fftw_planner_mutex()); \
      char* s = X##export_wisdom_to_string();                 \
      std::string out = s != nullptr ? s : "";                \
      std::free(s);                                           \
      return out;                                             \
    }                                                         \
    static bool import(const std::string& s) {                \
      std::lock_guard<std::mutex> lock(fftw_planner_mutex()); \
      return X##import_wisdom_from_string(s.c_str()) != 0;    \
    }                                                         \
    static void forget() {                                    \
      std::lock_guard<std::mutex> lock(fftw_planner_mutex()); \
      X##forget_wisdom();                                     \
    }                                                         \
  };
DARRAY_FFTW_WISDOM(double, fftw_, "fftw_wisdom")
DARRAY_FFTW_WISDOM(float, fftwf_, "fftwf_wisdom")
#undef DARRAY_FFTW_WISDOM
inline const char* fftw_version_string() { return fftw_version; }
#endif

// The precision a FFTW section header names ("fftw-3.3.10 fftw_wisdom #x..."): "fftw_wisdom", "fftwf_wisdom",
// ... or "" when the header is not FFTW's.
inline std::string fftw_section_kind(const std::string& header) {
  if (header.compare(0, 5, "fftw-") != 0) return "";
  const std::vector<std::string> words = darray::detail::split_words(header);
  return words.size() > 1 ? words[1] : std::string();
}

// Whether `child` reads as an entry FFTW writes, "(NAME REG_ID #xL #xU #xT #xS0 #xS1 #xS2 #xS3)", with each hex field
// within 32 bits, L and U within FFTW's 20-bit flag fields and T within its 9-bit one. FFTW's import aborts the whole
// process (an assertion in its planner.c) on an entry whose flags do not fit, so such text must never reach it.
// Every FFTW section is checked, whatever version its header names: FFTW's scanner matches its header more loosely
// (any blanks between the words) than a version comparison here would.
inline bool fftw_entry_fits(const std::string& child) {
  const std::vector<std::string> w = darray::detail::split_words(child.substr(1, child.size() - 2));
  if (w.size() != 9 || w[1].empty() || w[1].size() > 9 || w[1].find_first_not_of("0123456789") != std::string::npos)
    return false;
  // FFTW's scanner takes every character up to ' ' as a blank: a name holding one would be read as two fields.
  for (const char ch : w[0])
    if (static_cast<unsigned char>(ch) <= ' ') return false;
  unsigned long value[7];
  for (std::size_t k = 0; k < 7; ++k) {
    const std::string& t = w[2 + k];
    if (t.size() < 3 || t.size() > 10 || t.compare(0, 2, "#x") != 0 ||
        t.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
      return false;
    value[k] = std::strtoul(t.c_str() + 2, nullptr, 16);
  }
  return value[0] < (1ul << 20) && value[1] < (1ul << 20) && value[2] < (1ul << 9);
}

// Whether a FFTW section header ("fftw-3.3.10 fftw_wisdom #x...") names this FFTW's version (fftw_version is
// "fftw-3.3.10" or "fftw-3.3.10-sse2-avx..."). FFTW itself also compares a checksum of its build's solvers.
inline bool written_by_this_fftw(const std::string& header) {
#if defined(DARRAY_HAS_FFTW)
  const std::string version = header.substr(0, header.find(' '));
  const std::string mine = fftw_version_string();
  return mine.compare(0, version.size(), version) == 0 &&
         (mine.size() == version.size() || mine[version.size()] == '-');
#else
  (void)header;
  return false;
#endif
}

// This process's wisdom as canonical sections: darray's choices, then FFTW's per precision, then the sections kept for
// other solver configurations.
inline std::vector<Section> local_wisdom() {
  std::vector<Section> out;
  Section mine;
  mine.header = darray_header;
  {
    std::lock_guard<std::mutex> lock(choices_mutex());
    for (const auto& kv : choice_table()) mine.children.push_back(format_choice(kv.first, kv.second));
  }
  out.push_back(std::move(mine));
#if defined(DARRAY_HAS_FFTW)
  for (const std::string& text : {FftwWisdom<double>::exported(), FftwWisdom<float>::exported()}) {
    std::vector<Section> s;
    std::string why;
    if (split_sections(text, &s, &why)) out.insert(out.end(), s.begin(), s.end());
  }
#endif
  std::set<std::string> kept;
  {
    std::lock_guard<std::mutex> lock(choices_mutex());
    kept = kept_sections();
  }
  for (const std::string& text : kept) {
    std::vector<Section> s;
    std::string why;
    if (split_sections(text, &s, &why)) out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

// The union of several processes' sections, canonical: one section per header, children merged. darray's choices
// merge by key, the first process's entry winning (they agree anyway: choices are taken collectively).
inline std::string merge_wisdom(const std::vector<std::vector<Section>>& per_process) {
  std::map<std::string, std::set<std::string>> by_header;
  std::vector<std::string> order;
  std::map<std::string, Choice> choices;
  for (const auto& sections : per_process)
    for (const Section& s : sections) {
      if (s.header == darray_header) {
        for (const std::string& c : s.children) {
          std::string key;
          Choice choice;
          if (parse_choice(c, &key, &choice)) choices.emplace(key, choice);
        }
        continue;
      }
      if (by_header.count(s.header) == 0) order.push_back(s.header);
      by_header[s.header].insert(s.children.begin(), s.children.end());
    }
  std::set<std::string> mine;
  for (const auto& kv : choices) mine.insert(format_choice(kv.first, kv.second));
  std::string text = format_section(darray_header, {mine.begin(), mine.end()});
  for (const std::string& h : order) text += format_section(h, {by_header[h].begin(), by_header[h].end()});
  return text;
}

#if defined(DARRAY_HAS_FFTW)
// The header this FFTW writes for a precision's section ("fftw-3.3.10 fftw_wisdom #x... #x... #x... #x...", the last
// four words the checksum of the solvers it has registered now). Costs an export (FFTW computes the checksum).
inline std::string own_fftw_header(const std::string& kind) {
  std::vector<Section> s;
  std::string why;
  const std::string text =
      kind == FftwWisdom<double>::name ? FftwWisdom<double>::exported() : FftwWisdom<float>::exported();
  return split_sections(text, &s, &why) && !s.empty() ? s.front().header : std::string();
}
#endif

// Validates and imports wisdom text on this process (no communication). Returns "" or why it was refused; on a
// refusal nothing of darray's is recorded (FFTW keeps the sections it had accepted: they are valid for this build).
// FFTW sections this FFTW version wrote under another solver configuration are not imported but kept for saving
// (kept_sections), counted in *kept; darray's choices are taken all the same.
inline std::string import_wisdom_text(const std::string& text, std::size_t* kept = nullptr) {
  {
    std::lock_guard<std::mutex> lock(choices_mutex());
    const auto it = imported_texts().find(text);
    if (it != imported_texts().end()) {
      if (kept != nullptr) *kept = it->second;
      return "";
    }
  }
  std::vector<Section> sections;
  std::string why;
  if (!split_sections(text, &sections, &why)) return why;
  std::map<std::string, Choice> choices;
  std::vector<std::string> other_configuration;
  for (const Section& s : sections) {
    if (s.header == darray_header) {
      for (const std::string& c : s.children) {
        std::string key;
        Choice choice;
        if (!parse_choice(c, &key, &choice)) return "malformed darray entry " + c;
        choices[key] = choice;
      }
      continue;
    }
    const std::string kind = fftw_section_kind(s.header);
    if (kind.empty()) return "unknown section \"(" + s.header.substr(0, 40) + "\"";
#if defined(DARRAY_HAS_FFTW)
    if (kind != FftwWisdom<double>::name && kind != FftwWisdom<float>::name)
      return "a " + kind + " section, a precision darray does not use";
#endif
    for (const std::string& c : s.children)
      if (!fftw_entry_fits(c))
        return "an FFTW entry this FFTW cannot take (corrupt, or another FFTW version's format): " + c.substr(0, 60);
  }
#if defined(DARRAY_HAS_FFTW)
  for (const Section& s : sections) {
    const std::string kind = fftw_section_kind(s.header);
    if (kind.empty() || (s.children.empty() && written_by_this_fftw(s.header))) continue;  // nothing to import
    const std::string section = format_section(s.header, s.children);
    {
      std::lock_guard<std::mutex> lock(choices_mutex());
      if (imported_sections().count(section) != 0) continue;
    }
    const bool ok =
        kind == FftwWisdom<double>::name ? FftwWisdom<double>::import(section) : FftwWisdom<float>::import(section);
    if (!ok && written_by_this_fftw(s.header) && s.header != own_fftw_header(kind)) {
      other_configuration.push_back(section);
      continue;
    }
    if (!ok)
      return "this FFTW (" + std::string(fftw_version_string()) + ") refused its \"" + s.header.substr(0, 40) +
             "...\" section: written by another FFTW version or build, or corrupt";
    std::lock_guard<std::mutex> lock(choices_mutex());
    imported_sections().insert(section);
  }
#endif
  for (const auto& kv : choices) record_choice(kv.first, kv.second);
  std::lock_guard<std::mutex> lock(choices_mutex());
  imported_texts()[text] = other_configuration.size();
  kept_sections().insert(other_configuration.begin(), other_configuration.end());
  if (kept != nullptr) *kept = other_configuration.size();
  return "";
}

// Whether every entry of `text` is already in `previous` (then saving would teach the file nothing; the merged
// text may still differ, e.g. when FFTW kept one of two answers the file held for one problem).
inline bool holds_all(const std::string& previous, const std::string& text) {
  std::vector<Section> old_sections, new_sections;
  std::string why;
  if (!split_sections(previous, &old_sections, &why) || !split_sections(text, &new_sections, &why)) return false;
  std::map<std::string, std::set<std::string>> known;
  for (const Section& s : old_sections) known[s.header].insert(s.children.begin(), s.children.end());
  for (const Section& s : new_sections) {
    const auto it = known.find(s.header);
    for (const std::string& c : s.children)
      if (it == known.end() || it->second.count(c) == 0) return false;
  }
  return true;
}

struct LoadedWisdom {
  WisdomReport report;
  std::string text;      // the file's contents as read (empty when missing)
  std::size_t kept = 0;  // FFTW sections of another solver configuration, kept (see import_wisdom_text)
};

// The wisdom file process 0 read last, as it was then (choices_mutex; forget_all_wisdom clears it), and how many
// files it has read whole (a test hook).
struct ReadWisdomFile {
  bool valid = false;
  std::string path;
  darray::detail::FileStamp stamp;
  std::string text;
};
inline ReadWisdomFile& last_read_wisdom_file() {
  static ReadWisdomFile last;
  return last;
}
inline std::size_t& wisdom_file_reads() {
  static std::size_t reads = 0;
  return reads;
}

// Process 0's look at a wisdom file: false where it does not exist, else its text in *text, the text read last
// where the file's stamp is still the one taken then (darray::detail::FileStamp), else read whole. Every plan that
// names Options::wisdom_file loads the file, and its open, reads and close cost 5-8 us a plan on this VM, where
// system calls are dear (bench/README, "A wisdom file read once while unchanged": one process, r2c 64^3 from wisdom
// already in memory, 49 -> 44 us against 39 us for an estimate plan). A write in place of the same size within the
// file system's timestamp tick can go unseen: the plan then takes the file's previous wisdom, which is valid wisdom
// all the same. IoError as read_whole_file.
inline bool read_wisdom_text(const char* api, const std::string& path, std::string* text) {
  struct stat st;
  if (!darray::detail::require_regular_file(api, path, /*missing_ok=*/true, &st)) return false;
  {
    std::lock_guard<std::mutex> lock(choices_mutex());
    const ReadWisdomFile& last = last_read_wisdom_file();
    if (last.valid && last.path == path && last.stamp == darray::detail::file_stamp(st)) {
      *text = last.text;
      return true;
    }
  }
  darray::detail::FileStamp stamp;
  if (!read_whole_file(api, path, text, &stamp)) return false;
  std::lock_guard<std::mutex> lock(choices_mutex());
  ++wisdom_file_reads();
  last_read_wisdom_file() = ReadWisdomFile{true, path, stamp, *text};
  return true;
}

// Collective over comm: process 0 reads `path` and broadcasts it, every process imports it and they agree on the
// outcome. IoError everywhere when the path cannot be read (a directory, no permission); content problems are a
// rejection with a warning from process 0, never an error.
inline LoadedWisdom load_wisdom_file(const char* api, const std::string& path, MPI_Comm comm) {
  int rank = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  LoadedWisdom out;
  int exists = 0;
  CapturedError error;
  if (rank == 0)
    error = capture_error([&] {
      DARRAY_THROW_IF(path.empty(), IoError, api, "the wisdom path is empty; expected a file name");
      exists = read_wisdom_text(api, path, &out.text) ? 1 : 0;
    });
  agree_on_error(comm, error);
  DARRAY_MPI_CHECK(MPI_Bcast(&exists, 1, MPI_INT, 0, comm));
  if (exists == 0) {
    out.report = {WisdomStatus::missing, "wisdom file " + quoted_path(path) + " not found: planned without wisdom"};
    return out;
  }
  bcast_string(comm, out.text, 0);
  std::string why = import_wisdom_text(out.text, &out.kept);
  int ok = why.empty() ? 1 : 0, all = 0;
  DARRAY_MPI_CHECK(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
  if (all == 1) {
    out.report = {WisdomStatus::loaded, "wisdom loaded from " + quoted_path(path)};
    if (out.kept > 0)
      out.report.message +=
          " (its FFTW wisdom for another FFTW solver configuration, FFTW-MPI or threads set up in one program and not "
          "the other or another CPU, kept beside this one's)";
    return out;
  }
  // Every process tells process 0's reason (identical input, so the same reason, barring a broken process).
  int first_bad = ok ? 1 << 30 : rank, first = 0;
  DARRAY_MPI_CHECK(MPI_Allreduce(&first_bad, &first, 1, MPI_INT, MPI_MIN, comm));
  bcast_string(comm, why, first);
  out.report = {WisdomStatus::rejected, "wisdom file " + quoted_path(path) + " ignored: " + why};
  if (rank == 0) DARRAY_LOG(warn, api << ": " << out.report.message);
  return out;
}

// Collective over comm: every process's wisdom, merged on process 0 and written to `path` (a temporary renamed
// over it) unless the file already holds exactly that (`previous`, the text loaded before planning; pass nullptr
// to write unconditionally). Returns whether it wrote; IoError everywhere when writing fails.
inline bool save_wisdom_file(const char* api, const std::string& path, const std::string* previous, MPI_Comm comm) {
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::string mine;
  for (const Section& s : local_wisdom()) mine += format_section(s.header, s.children);
  DARRAY_THROW_IF(mine.size() > static_cast<std::size_t>(INT32_MAX), NotSupported, api,
                  "the wisdom of one process is " << mine.size() << " bytes; at most 2^31 - 1 are supported");
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  DARRAY_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    long long total = 0;
    for (int p = 0; p < size; ++p) {
      offsets[static_cast<std::size_t>(p)] = static_cast<int>(total);
      total += lengths[static_cast<std::size_t>(p)];
    }
    DARRAY_THROW_IF(total > INT32_MAX, NotSupported, api, "the merged wisdom exceeds 2^31 - 1 bytes");
    all.resize(static_cast<std::size_t>(total));
  }
  DARRAY_MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_CHAR, rank == 0 ? &all[0] : nullptr, lengths.data(),
                               offsets.data(), MPI_CHAR, 0, comm));
  int wrote = 0;
  CapturedError error;
  if (rank == 0)
    error = capture_error([&] {
      DARRAY_THROW_IF(path.empty(), IoError, api, "the wisdom path is empty; expected a file name");
      std::vector<std::vector<Section>> per_process;
      for (int p = 0; p < size; ++p) {
        std::vector<Section> s;
        std::string why;
        const auto from = static_cast<std::size_t>(offsets[static_cast<std::size_t>(p)]);
        split_sections(all.substr(from, static_cast<std::size_t>(lengths[static_cast<std::size_t>(p)])), &s, &why);
        per_process.push_back(std::move(s));
      }
      const std::string text = merge_wisdom(per_process);
      if (previous != nullptr && holds_all(*previous, text)) return;
      write_whole_file(api, path, text);
      wrote = 1;
    });
  agree_on_error(comm, error);
  DARRAY_MPI_CHECK(MPI_Bcast(&wrote, 1, MPI_INT, 0, comm));
  return wrote != 0;
}

// Forgets FFTW's wisdom (both precisions) and darray's choices on this process. Plans already built keep working.
inline void forget_all_wisdom() {
#if defined(DARRAY_HAS_FFTW)
  FftwWisdom<double>::forget();
  FftwWisdom<float>::forget();
#endif
  std::lock_guard<std::mutex> lock(choices_mutex());
  choice_table().clear();
  imported_texts().clear();
  imported_sections().clear();
  kept_sections().clear();
  last_read_wisdom_file() = ReadWisdomFile{};
}

}  // namespace detail
}  // namespace fft
}  // namespace darray
