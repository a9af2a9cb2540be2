# cmake -DDOXYGEN=<exe> -DSOURCE_DIR=<repo> -DOUTPUT_DIR=<dir> -P run_doxygen.cmake
# Runs docs/Doxyfile from the repository root with its output in OUTPUT_DIR, and fails on any warning or error line
# (Doxygen's WARN_AS_ERROR=FAIL_ON_WARNINGS would stop at the first one; this lists them all).
cmake_minimum_required(VERSION 3.20)
file(READ ${SOURCE_DIR}/docs/Doxyfile config)
file(REMOVE_RECURSE ${OUTPUT_DIR})
file(MAKE_DIRECTORY ${OUTPUT_DIR})
file(WRITE ${OUTPUT_DIR}/Doxyfile "${config}\nOUTPUT_DIRECTORY = ${OUTPUT_DIR}\n")
execute_process(COMMAND ${DOXYGEN} ${OUTPUT_DIR}/Doxyfile WORKING_DIRECTORY ${SOURCE_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen exited with status ${rc}")
endif()
string(REGEX MATCHALL "[^\n]*(warning|error)[^\n]*" problems "${out}${err}")
list(LENGTH problems count)
if(count GREATER 0)
  message(FATAL_ERROR "doxygen printed ${count} warning or error lines (listed above); the reference must build clean")
endif()
# The reference must hold the API, not just build: the main types and the guide pages are there.
foreach(page classdarray_1_1NamedSharding.html classdarray_1_1DistributedArray.html classdarray_1_1fft_1_1Plan.html
        md_docs_api.html md_docs_design.html md_docs_coming_from_jax.html)
  if(NOT EXISTS ${OUTPUT_DIR}/html/${page})
    message(FATAL_ERROR "doxygen wrote no ${OUTPUT_DIR}/html/${page}")
  endif()
endforeach()
# The headers' // comments are in it (docs/doxygen-filter.awk): a comment before a declaration, one after a member,
# a file's opening lines; and the guide's programs keep their comments (the filter applies to headers only).
foreach(check "structdarray_1_1MemoryStats.html|freed blocks kept for reuse"
        "classdarray_1_1NamedSharding.html|Number of blocks along an array dim"
        "environment_8hpp.html|RAII start-up and shut-down of MPI"
        "md_docs_coming_from_jax.html|Device queries: which devices the job has")
  string(REPLACE "|" ";" check "${check}")
  list(GET check 0 page)
  list(GET check 1 text)
  file(READ ${OUTPUT_DIR}/html/${page} html)
  string(FIND "${html}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${OUTPUT_DIR}/html/${page} does not contain \"${text}\"")
  endif()
endforeach()
message("docs.doxygen: the API reference is in ${OUTPUT_DIR}/html/index.html, 0 warnings")
