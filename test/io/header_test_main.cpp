// Catch2's own main for the io tests that need no MPI (the header parser, writer and piece planner): they run as
// a plain process, which lets the target carry AddressSanitizer without an MPI launcher in the way.
#define CATCH_CONFIG_MAIN
// Catch2's main instantiates std::regex, in which GCC 12 at -O3 reports a false -Wmaybe-uninitialized from inside
// libstdc++ (std::function); nothing of this file is involved.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <catch2/catch.hpp>
