# Installs the headers, the darray::darray INTERFACE target and a relocatable package config, so that
# find_package(darray CONFIG REQUIRED) brings MPI, Kokkos and the optional parts this build was configured with
# (at the paths this build found them: the consumer runs no dependency detection of its own).
include(CMakePackageConfigHelpers)
# The source tree's darray/config.hpp (defaults for include-only use) is replaced by the generated one.
install(DIRECTORY libdarray/include/darray DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN config.hpp EXCLUDE)
install(FILES ${DARRAY_GENERATED_INCLUDE_DIR}/darray/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/darray)
install(TARGETS darray EXPORT darrayTargets)
set(DARRAY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/darray)
install(EXPORT darrayTargets NAMESPACE darray:: DESTINATION ${DARRAY_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/darrayConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/darrayConfig.cmake
  INSTALL_DESTINATION ${DARRAY_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/darrayConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/darrayConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/darrayConfigVersion.cmake
  cmake/DarrayFindKokkos.cmake
  DESTINATION ${DARRAY_INSTALL_CMAKEDIR})
include(DarrayPkgConfig)
