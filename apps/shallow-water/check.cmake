# Runs shallow-water at several (process count, host device count) layouts and checks that every run succeeds,
# prints the same checksum (bit-for-bit identical final state), conserves mass to round-off (|relative change| <
# 1e-12) and writes a PPM image. Arguments ("|"-separated lists, since add_test would split ";" lists):
#   -DMPIEXEC=<mpiexec> -DNUMPROC_FLAG=<-n> -DPREFLAGS=<a|b> -DPOSTFLAGS=<a|b> -DAPP=<shallow-water> -DLAYOUTS=<np:hd|np:hd|...> -DARGS=<a|b>
#   -DWORKDIR=<dir for the images>
include(${CMAKE_CURRENT_LIST_DIR}/../file_magic.cmake)
string(REPLACE "|" ";" preflags "${PREFLAGS}")
string(REPLACE "|" ";" postflags "${POSTFLAGS}")
string(REPLACE "|" ";" layouts "${LAYOUTS}")
string(REPLACE "|" ";" args "${ARGS}")
set(reference "")
foreach(layout IN LISTS layouts)
  string(REPLACE ":" ";" pair "${layout}")
  list(GET pair 0 np)
  list(GET pair 1 hd)
  set(image "${WORKDIR}/shallow-water-np${np}-hd${hd}.ppm")
  file(REMOVE "${image}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env DARRAY_HOST_DEVICE_COUNT=${hd} ${MPIEXEC} ${NUMPROC_FLAG} ${np} ${preflags} ${APP} ${postflags} ${args}
            --image ${image}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("----- ${np} processes x ${hd} host devices -----\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "shallow-water failed at ${np} processes x ${hd} devices (exit ${rc}):\n${err}")
  endif()
  if(NOT out MATCHES "checksum: (0x[0-9a-f]+)")
    message(FATAL_ERROR "no checksum in the output at ${np} x ${hd}")
  endif()
  set(checksum "${CMAKE_MATCH_1}")
  if(NOT out MATCHES "relative change ([-+0-9.e]+)")
    message(FATAL_ERROR "no mass change in the output at ${np} x ${hd}")
  endif()
  string(REGEX REPLACE "^-" "" change "${CMAKE_MATCH_1}")
  if(NOT change LESS 1e-12)
    message(FATAL_ERROR "mass not conserved at ${np} x ${hd}: relative change ${CMAKE_MATCH_1}")
  endif()
  expect_file_magic("${image}" "5036" "a binary PPM")
  if(reference STREQUAL "")
    set(reference "${checksum}")
    set(reference_layout "${np} x ${hd}")
  elseif(NOT checksum STREQUAL reference)
    message(FATAL_ERROR "final state differs: checksum ${checksum} at ${np} processes x ${hd} devices, ${reference} "
                        "at ${reference_layout}")
  endif()
endforeach()
message("all layouts: checksum ${reference}, mass conserved")
