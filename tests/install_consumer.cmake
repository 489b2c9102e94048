# ctest script: install attn into a scratch prefix, run the installed binary (its data
# files found under the prefix), build tests/consumer against it with find_package(attn),
# run it. Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/attn include/attn/attn.hpp share/man/man1/attn.1 share/bash-completion/completions/attn
          share/zsh/vendor-completions/_attn share/attn/data/macbeth.txt share/attn/data/example-dump.json)
  if(NOT EXISTS ${WORK_DIR}/prefix/${f})
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()
# The installed binary, run from a folder that holds no data/: it finds its corpus in
# <prefix>/share/attn/data (attn/io/data_files.hpp), and a lesson and a view run.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA_DIR
                        ${WORK_DIR}/prefix/bin/attn train --task chars --steps 2 --eval-every 0 --threads 1
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "text: [^\n]*prefix/share/attn/data/macbeth.txt")
  message(FATAL_ERROR "the installed attn did not train on share/attn/data/macbeth.txt (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/prefix/bin/attn lesson 3 WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "Lesson 3 done")
  message(FATAL_ERROR "the installed attn did not run lesson 3 (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/prefix/bin/attn view ${WORK_DIR}/prefix/share/attn/data/example-dump.json
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "the installed attn did not view the installed example dump (${rc}): ${err}")
endif()
# The build's -march=native (and warning flags) are the project's own business:
# nothing of them may reach a consumer through the exported targets.
file(GLOB_RECURSE exported ${WORK_DIR}/prefix/*/cmake/attn/*.cmake)
if(NOT exported)
  message(FATAL_ERROR "install has no CMake package files")
endif()
foreach(f IN LISTS exported)
  file(READ ${f} text)
  if(text MATCHES "march|-W[a-z]|attn_warnings")
    message(FATAL_ERROR "${f} hands build flags to consumers: ${CMAKE_MATCH_0}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G Ninja
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed (${rc})")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer ran but failed (${rc})")
endif()
message(STATUS "installed attn works from an outside project")
