// Compiles the precompiled header the test executables share (darray.hpp, Kokkos and Catch2 take most of each
// test's compile time on a 2-core CI machine).
