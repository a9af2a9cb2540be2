# expect_file_magic(<path> <hex> <what>): fails unless <path> exists and starts with the bytes <hex> (e.g. "5036",
# "P6", for a binary PPM; "934e554d5059", "\x93NUMPY", for a .npy file). Included by the apps' check scripts.
function(expect_file_magic path hex what)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "${path} was not written")
  endif()
  string(LENGTH "${hex}" digits)
  math(EXPR bytes "${digits} / 2")
  file(READ "${path}" magic LIMIT ${bytes} HEX)
  if(NOT magic STREQUAL "${hex}")
    message(FATAL_ERROR "${path} is not ${what} (starts with bytes ${magic})")
  endif()
endfunction()
