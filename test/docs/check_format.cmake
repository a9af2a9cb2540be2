# cmake -DCLANG_FORMAT=<exe> -DGIT=<exe or empty> -DSOURCE_DIR=<repo> -P check_format.cmake
# clang-format --dry-run --Werror with the repository's .clang-format over every tracked .hpp/.cpp of libdarray/,
# test/, apps/, bench/ and docs/ (every such file on disk when the source tree is not a git checkout). Lists the files
# that differ; `clang-format -i <file>` fixes one.
cmake_minimum_required(VERSION 3.20)
set(files)
if(GIT AND EXISTS ${SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} ls-files -- libdarray test apps bench docs
    RESULT_VARIABLE rc OUTPUT_VARIABLE listed)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ls-files failed with status ${rc}")
  endif()
  string(REPLACE "\n" ";" listed "${listed}")
  foreach(f IN LISTS listed)
    if(f MATCHES "\\.(hpp|cpp)$" AND EXISTS ${SOURCE_DIR}/${f})
      list(APPEND files ${f})
    endif()
  endforeach()
else()
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/libdarray/*.hpp ${SOURCE_DIR}/libdarray/*.cpp
    ${SOURCE_DIR}/test/*.hpp ${SOURCE_DIR}/test/*.cpp ${SOURCE_DIR}/apps/*.hpp ${SOURCE_DIR}/apps/*.cpp
    ${SOURCE_DIR}/bench/*.hpp ${SOURCE_DIR}/bench/*.cpp ${SOURCE_DIR}/docs/*.cpp)
endif()
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "no .hpp/.cpp files found under ${SOURCE_DIR}")
endif()
# One clang-format run for all files: it names each file that differs in its "<file>:<line>:<col>: error" lines.
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files} WORKING_DIRECTORY ${SOURCE_DIR}
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  string(REGEX MATCHALL "[^\n:]+:[0-9]+:[0-9]+: error" hits "${err}")
  set(bad)
  foreach(hit IN LISTS hits)
    string(REGEX REPLACE ":[0-9]+:[0-9]+: error$" "" f "${hit}")
    list(APPEND bad ${f})
  endforeach()
  list(REMOVE_DUPLICATES bad)
  list(LENGTH bad nbad)
  list(JOIN bad "\n  " listing)
  string(SUBSTRING "${err}" 0 3000 head)
  message("${head}")
  message(FATAL_ERROR "clang-format exited with status ${rc}; ${nbad} of ${count} files are not formatted with "
    ".clang-format (clang-format -i fixes them):\n  ${listing}")
endif()
message("format.clang-format: ${count} files formatted with .clang-format")
