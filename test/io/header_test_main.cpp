// Catch2's own main for the io tests that need no MPI (the header parser, writer and piece planner): they run as
// a plain process, which lets the target carry AddressSanitizer without an MPI launcher in the way.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
