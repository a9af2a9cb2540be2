// Reductions against serial references on the gathered array, on random layouts; NaN and inf cases.
#include <catch2/catch.hpp>
