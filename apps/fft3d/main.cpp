// fft3d: a distributed 3-D FFT of a chosen size on every device of the job, timed and (when small) verified
// against a single-process FFTW transform of the gathered array.
//   mpirun -n 2 fft3d --size 128                     # 128^3 complex128, slab or pencil chosen automatically
//   mpirun -n 4 fft3d --shape 96x80x64 --real --precision float --layout transposed
//   DARRAY_HOST_DEVICE_COUNT=4 fft3d --size 64 --decomposition pencil --iterations 20
// Prints the layout, the time per forward and backward transform (the slowest process, median of --iterations) and
// GFlop/s by the usual convention: 5 N log2 N flops per complex transform of N points (2.5 N log2 N for real).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

#if defined(DARRAY_HAS_FFTW)
#include <fftw3.h>
#endif

namespace {

using darray::Index;
using darray::Shape;

struct Config {
  int64_t size = 64;
  std::string shape;
  bool real = false;
  std::string precision = "double";
  std::string layout = "same";
  std::string decomposition = "auto";
  std::string planner = "estimate";
  int iterations = 10;
  std::string verify = "auto";  // auto: when the array has at most 2^21 points
};

// Reproducible input in [-1, 1): the same for every layout and process count.
double noise(int64_t flat) {
  uint64_t z = static_cast<uint64_t>(flat) * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

template <class T>
darray::DistributedArray<T, 3> make_input(const Shape& shape, const darray::NamedSharding& sharding) {
  return darray::make_array_from_callback<T, 3>(shape, sharding, [&](const Index& box) {
    std::vector<T> v;
    v.reserve(static_cast<std::size_t>(darray::volume(box)));
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k) {
          const int64_t f = (i * shape[1] + j) * shape[2] + k;
          if constexpr (std::is_floating_point<T>::value)
            v.push_back(static_cast<T>(noise(f)));
          else
            v.push_back(T(static_cast<typename T::value_type>(noise(2 * f)),
                          static_cast<typename T::value_type>(noise(2 * f + 1))));
        }
    return v;
  });
}

// Median over iterations of the slowest process's time for one call of fn.
template <class Fn>
double time_per_call(int iterations, Fn&& fn) {
  std::vector<double> times;
  for (int it = 0; it < iterations; ++it) {
    darray::barrier();
    const double t0 = MPI_Wtime();
    fn();
    double t = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double magnitude(double v) { return std::abs(v); }
double magnitude(const Kokkos::complex<double>& v) { return std::hypot(v.real(), v.imag()); }

template <class T>
double relative_error(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, magnitude(a[i] - b[i]));
    ref = std::max(ref, magnitude(b[i]));
  }
  return ref == 0 ? diff : diff / ref;
}

#if defined(DARRAY_HAS_FFTW)
// The reference: FFTW in double precision on one process, whatever precision the distributed run used.
std::vector<Kokkos::complex<double>> serial_forward(const std::vector<Kokkos::complex<double>>& in, const Shape& s) {
  std::vector<Kokkos::complex<double>> tmp(in), out(in.size());
  fftw_plan p = fftw_plan_dft_3d(int(s[0]), int(s[1]), int(s[2]), reinterpret_cast<fftw_complex*>(tmp.data()),
                                 reinterpret_cast<fftw_complex*>(out.data()), FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return out;
}
std::vector<Kokkos::complex<double>> serial_forward(const std::vector<double>& in, const Shape& s) {
  std::vector<double> tmp(in);
  std::vector<Kokkos::complex<double>> out(static_cast<std::size_t>(s[0] * s[1] * (s[2] / 2 + 1)));
  fftw_plan p = fftw_plan_dft_r2c_3d(int(s[0]), int(s[1]), int(s[2]), tmp.data(),
                                     reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return out;
}
#endif

template <class T>
auto to_double(const std::vector<T>& v) {
  if constexpr (std::is_floating_point<T>::value) {
    return std::vector<double>(v.begin(), v.end());
  } else {
    std::vector<Kokkos::complex<double>> out;
    out.reserve(v.size());
    for (const T& x : v) out.emplace_back(x.real(), x.imag());
    return out;
  }
}

// One run for element precision R; returns the process exit status.
template <class R, class PlanType, class InT>
int run(const Config& cfg, const Shape& shape) {
  const bool root = darray::process_index() == 0;
  const auto decomposition = cfg.decomposition == "slab"     ? darray::fft::Decomposition::slab
                             : cfg.decomposition == "pencil" ? darray::fft::Decomposition::pencil
                                                             : darray::fft::Decomposition::automatic;
  const darray::NamedSharding sharding = darray::fft::auto_sharding(shape, decomposition);
  darray::fft::Options options;
  options.output = cfg.layout == "transposed" ? darray::fft::OutputLayout::transposed : darray::fft::OutputLayout::same;
  options.planner = cfg.planner == "measure" ? darray::fft::Planner::measure : darray::fft::Planner::estimate;
  const double t_plan0 = MPI_Wtime();
  const PlanType plan(shape, sharding, options);
  const double t_plan = MPI_Wtime() - t_plan0;
  const auto x = make_input<InT>(shape, sharding);

  const double n = static_cast<double>(darray::volume(shape));
  const double flops = (cfg.real ? 2.5 : 5.0) * n * std::log2(n);
  if (root) {
    std::printf("fft3d: %s %s %s on %d devices (%d processes), backend %s\n", darray::shape_to_string(shape).c_str(),
                cfg.real ? (sizeof(R) == 8 ? "float64->complex128" : "float32->complex64")
                         : (sizeof(R) == 8 ? "complex128" : "complex64"),
                cfg.real ? "r2c" : "c2c", darray::device_count(), darray::process_count(), plan.backend());
    std::printf("  mesh %s, input %s, output layout %s, %d transposes per transform\n",
                sharding.mesh().to_string().c_str(), sharding.spec().to_string().c_str(),
                darray::fft::to_string(options.output), plan.transposes());
    std::printf("  stages:");
    for (std::size_t s = 0; s < plan.stages().size(); ++s) {
      std::ostringstream os;
      os << plan.stages()[s];
      std::printf("%s %s", s ? " ->" : "", os.str().c_str());
    }
    std::printf("\n  plan built in %.3f s (FFTW_%s)\n", t_plan, cfg.planner == "measure" ? "MEASURE" : "ESTIMATE");
  }
  // Warm-up: first-touch of buffers, communicator set-up.
  auto y = plan.forward(x);
  auto z = plan.backward(y);
  const double tf = time_per_call(cfg.iterations, [&] { y = plan.forward(x); });
  const double tb = time_per_call(cfg.iterations, [&] { z = plan.backward(y); });
  if (root) {
    std::printf("  forward : %10.6f s per transform, %8.3f GFlop/s\n", tf, flops / tf * 1e-9);
    std::printf("  backward: %10.6f s per transform, %8.3f GFlop/s\n", tb, flops / tb * 1e-9);
  }

  const bool verify = cfg.verify == "always" || (cfg.verify == "auto" && n <= 2097152.0);
  if (!verify) return 0;
#if defined(DARRAY_HAS_FFTW)
  const auto gx = to_double(darray::process_allgather(x));
  const double forward_error = relative_error(to_double(darray::process_allgather(y)), serial_forward(gx, shape));
  const double round_trip_error = relative_error(to_double(darray::process_allgather(z)), gx);
  const double tolerance = sizeof(R) == 8 ? 1e-12 : 1e-5;
  const bool ok = forward_error < tolerance && round_trip_error < tolerance;
  if (root)
    std::printf("  verify: max relative error %.3e (forward vs serial FFTW), %.3e (backward(forward(x)) vs x): %s\n",
                forward_error, round_trip_error, ok ? "verified" : "FAILED");
  return ok ? 0 : 1;
#else
  if (root) std::printf("  verify: skipped (built without FFTW, no serial reference)\n");
  return 0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fft3d: distributed 3-D FFT of a chosen size, timed and verified against serial FFTW"};
  Config cfg;
  app.add_option("--size", cfg.size, "cube edge n (an n x n x n array) unless --shape is given")
      ->check(CLI::PositiveNumber);
  app.add_option("--shape", cfg.shape, "global shape n0xn1xn2, e.g. 96x80x64");
  app.add_flag("--real", cfg.real, "real-to-complex forward / complex-to-real backward (numpy rfftn / irfftn)");
  app.add_option("--precision", cfg.precision, "double (complex128) or float (complex64)")
      ->check(CLI::IsMember({"double", "float"}));
  app.add_option("--layout", cfg.layout, "output layout: same (input sharding) or transposed (one transpose fewer)")
      ->check(CLI::IsMember({"same", "transposed"}));
  app.add_option("--decomposition", cfg.decomposition, "auto (slab when every device gets a plane), slab or pencil")
      ->check(CLI::IsMember({"auto", "slab", "pencil"}));
  app.add_option("--planner", cfg.planner, "FFTW planner: estimate or measure")
      ->check(CLI::IsMember({"estimate", "measure"}));
  app.add_option("--iterations", cfg.iterations, "timed transforms per direction (the median is printed)")
      ->check(CLI::PositiveNumber);
  app.add_option("--verify", cfg.verify, "compare with serial FFTW: auto (up to 2^21 points), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  CLI11_PARSE(app, argc, argv);

  int status = 0;
  try {
    darray::Environment env(argc, argv);
    Shape shape{cfg.size, cfg.size, cfg.size};
    if (!cfg.shape.empty()) {
      shape.clear();
      std::string t = cfg.shape;
      for (char& c : t)
        if (c == ',') c = 'x';
      for (const std::string& part : darray::detail::split(t, 'x'))
        shape.push_back(darray::detail::parse_int("--shape", part, 1, INT64_MAX, "three integers >= 1, e.g. 96x80x64"));
      DARRAY_THROW_IF(shape.size() != 3, InvalidArgument, "--shape",
                      "invalid value \"" << cfg.shape << "\"; expected three integers >= 1, e.g. 96x80x64");
    }
    if (cfg.precision == "double")
      status = cfg.real ? run<double, darray::fft::RealPlan<double>, double>(cfg, shape)
                        : run<double, darray::fft::Plan<double>, Kokkos::complex<double>>(cfg, shape);
    else
      status = cfg.real ? run<float, darray::fft::RealPlan<float>, float>(cfg, shape)
                        : run<float, darray::fft::Plan<float>, Kokkos::complex<float>>(cfg, shape);
  } catch (const std::exception& e) {
    std::cerr << "fft3d: error: " << e.what() << "\n";
    return 2;
  }
  return status;
}
