# cmake -DCOMMAND="exe|arg|..." -DEXPECT_REGEX=... -P expect_failure.cmake
# Passes when COMMAND exits non-zero and its output matches EXPECT_REGEX: a test that the program's own check fails.
string(REPLACE "|" ";" cmd "${COMMAND}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit status, got 0")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match \"${EXPECT_REGEX}\"")
endif()
