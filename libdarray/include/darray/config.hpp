// Default configuration, for include-only use straight from the source tree (-I<repo>/libdarray/include) with no
// CMake configure step. It enables nothing optional: no NCCL, no FFTW, no cuFFT, so using an FFT is a compile error
// naming what to install. To enable a part by hand, pass it on the command line and link its libraries, e.g.
//   mpicxx -std=c++17 -DDARRAY_HAS_FFTW=1 -I<repo>/libdarray/include ... -lfftw3 -lfftw3f
// A CMake build generates its own darray/config.hpp (from cmake/config.hpp.in) carrying what it found, puts it
// ahead of this one on the include path and installs it instead of this file.
#pragma once

#define DARRAY_CONFIG_GENERATED 0
