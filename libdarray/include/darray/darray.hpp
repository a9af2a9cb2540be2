// libdarray: MPI-native distributed arrays on Kokkos. Include this one header to get the whole public API.
#pragma once

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/partition_spec.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "darray/sharding/make_mesh.hpp"
#include "darray/sharding/visualize.hpp"
