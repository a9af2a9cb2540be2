// The ops layer: computing on distributed arrays as with jax.numpy. Element-wise map and operators, *_like
// factories and conversions, reductions that count every global element once, and NumPy-style printing.
#pragma once

#include "darray/ops/elementwise.hpp"
#include "darray/ops/like.hpp"
#include "darray/ops/print.hpp"
#include "darray/ops/reductions.hpp"
