# Runs pm-nbody at several (process count, host device count) layouts and checks each run: the Zel'dovich
# displacement error below MAX_ZELDOVICH (when given), total momentum zero to round-off every step (max |sum p| /
# sum |p| below N_p * 2^-52, what summing N_p doubles may leave of an exact zero), painted mass equal to N_p to round-off (< 1e-12 relative), no particle off the device that owns
# its cell after any migration, N_p particles at the end, and the same final particles (in id order) as the first
# layout's to 1e-12 relative (the app compares them itself with --compare). Last, the comparison must be able to fail:
# a run one step shorter must be reported DIFFERENT. Arguments ("|"-separated lists, since add_test splits ";"):
#   -DMPIEXEC=<mpiexec> -DMPIEXEC_FLAGS=<a|b> -DAPP=<pm-nbody> -DLAYOUTS=<np:hd|...> -DARGS=<a|b> -DWORKDIR=<dir>
#   -DNAME=<file prefix> [-DMAX_ZELDOVICH=<bound>] [-DIMAGE=ON]
string(REPLACE "|" ";" flags "${MPIEXEC_FLAGS}")
string(REPLACE "|" ";" layouts "${LAYOUTS}")
string(REPLACE "|" ";" args "${ARGS}")
set(reference "${WORKDIR}/${NAME}-reference.npy")
file(REMOVE "${reference}")

function(run_layout np hd extra)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env DARRAY_HOST_DEVICE_COUNT=${hd} ${MPIEXEC} ${flags} -n ${np} ${APP} ${args} --check
            ${extra}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
  set(rc "${rc}" PARENT_SCOPE)
endfunction()

# Fails unless the output has "<label> = <number>" with number < bound.
function(expect_below label bound where)
  if(NOT out MATCHES "${label} = ([-+0-9.e]+)")
    message(FATAL_ERROR "no \"${label}\" line in the output at ${where}")
  endif()
  if(NOT CMAKE_MATCH_1 LESS ${bound})
    message(FATAL_ERROR "${label} = ${CMAKE_MATCH_1} at ${where}; expected below ${bound}")
  endif()
endfunction()

set(first "")
foreach(layout IN LISTS layouts)
  string(REPLACE ":" ";" pair "${layout}")
  list(GET pair 0 np)
  list(GET pair 1 hd)
  set(where "${np} processes x ${hd} host devices")
  set(extra "")
  if(first STREQUAL "")
    list(APPEND extra --particles ${reference})
    if(IMAGE)
      list(APPEND extra --image ${WORKDIR}/${NAME}.ppm --density ${WORKDIR}/${NAME}-density.npy)
    endif()
  else()
    list(APPEND extra --compare ${reference} --tolerance 1e-12)
  endif()
  run_layout(${np} ${hd} "${extra}")
  message("----- ${where} -----\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pm-nbody failed at ${where} (exit ${rc}):\n${err}")
  endif()
  if(DEFINED MAX_ZELDOVICH)
    expect_below("max \\|x - x_analytic\\| / max displacement" ${MAX_ZELDOVICH} "${where}")
  endif()
  if(NOT out MATCHES "momentum: [^\n]* = ([-+0-9.e]+) \\(round-off bound N_p \\* 2\\^-52 = ([0-9.e+-]+)\\)")
    message(FATAL_ERROR "no momentum line in the output at ${where}")
  endif()
  if(NOT CMAKE_MATCH_1 LESS CMAKE_MATCH_2)
    message(FATAL_ERROR "total momentum ${CMAKE_MATCH_1} of sum |p| at ${where}: above round-off (${CMAKE_MATCH_2})")
  endif()
  expect_below("mass: max over steps \\|painted - N_p\\| / N_p" 1e-12 "${where}")
  if(NOT out MATCHES "migration: 0 particles off the device that owns their cell")
    message(FATAL_ERROR "particles off their owning device at ${where}")
  endif()
  if(NOT out MATCHES "particles: ([0-9]+) after the run \\(expected ([0-9]+)\\)" OR NOT CMAKE_MATCH_1 EQUAL
                                                                                      CMAKE_MATCH_2)
    message(FATAL_ERROR "particles lost or duplicated at ${where}")
  endif()
  if(first STREQUAL "")
    set(first "${where}")
    if(NOT EXISTS "${reference}")
      message(FATAL_ERROR "no particle file written at ${where}")
    endif()
    if(IMAGE)
      file(READ "${WORKDIR}/${NAME}.ppm" magic LIMIT 2 HEX)
      if(NOT magic STREQUAL "5036")  # "P6"
        message(FATAL_ERROR "${WORKDIR}/${NAME}.ppm is not a binary PPM (starts with bytes ${magic})")
      endif()
      file(READ "${WORKDIR}/${NAME}-density.npy" magic LIMIT 6 HEX)
      if(NOT magic STREQUAL "934e554d5059")  # "\x93NUMPY"
        message(FATAL_ERROR "${WORKDIR}/${NAME}-density.npy is not a .npy file (starts with bytes ${magic})")
      endif()
    endif()
  elseif(NOT out MATCHES "compare: max relative difference from [^\n]* = [-+0-9.e]+ \\(tolerance [^)]*\\): same")
    message(FATAL_ERROR "final particles at ${where} differ from those at ${first}")
  endif()
endforeach()

# The comparison can fail: one step fewer over the same span of a is a different particle set.
list(FIND args --steps at)
math(EXPR at "${at} + 1")
list(GET args ${at} steps)
math(EXPR fewer "${steps} - 1")
list(REMOVE_AT args ${at})
list(INSERT args ${at} ${fewer})
run_layout(1 1 "--compare;${reference};--tolerance;1e-12")
if(rc EQUAL 0 OR NOT out MATCHES "DIFFERENT")
  message(FATAL_ERROR "a run of ${fewer} steps was not reported DIFFERENT from the ${steps}-step reference:\n${out}")
endif()
message("all layouts: the same final particles as at ${first}; a ${fewer}-step run is reported DIFFERENT")
