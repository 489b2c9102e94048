# cmake -P cmake/check_module_docs.cmake: fails when the module tables of the docs
# disagree with the one in lib/CMakeLists.txt (the source of truth).
#
# Inputs (-D): SOURCE_DIR, MODULES ("core,cpu,..."), DEPS_<module> (its direct
# dependencies), the same arguments as check_layers.cmake. Checked:
#   docs/architecture.md: rows "| `module` | what it owns | may use |"
#   lib/README.md:        rows "| [module](module/README.md) | what it owns | may use |"
# Each must list every module once, in the table's order, and its "may use"
# column must name exactly the module's declared dependencies (any order);
# "nothing of attn" and "–" mean none.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" MODULES "${MODULES}")

set(errors "")

# The rows of `file` whose first cell matches `cell_re` (one capture: the module).
function(check_table file cell_re)
  file(READ "${SOURCE_DIR}/${file}" text)
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(seen "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^\\| ${cell_re} \\|.*\\| ([^|]*) \\|[ \t]*$")
      continue()
    endif()
    set(m "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" uses)
    list(APPEND seen ${m})
    if(NOT m IN_LIST MODULES)
      string(APPEND errors "  ${file}: module '${m}' is not in lib/CMakeLists.txt's table\n")
      continue()
    endif()
    set(documented "")
    if(NOT uses STREQUAL "nothing of attn" AND NOT uses STREQUAL "–" AND NOT uses STREQUAL "-")
      string(REPLACE "`" "" uses "${uses}")
      string(REPLACE ", " ";" documented "${uses}")
    endif()
    string(REPLACE "," ";" declared "${DEPS_${m}}")
    list(SORT documented)
    list(SORT declared)
    if(NOT documented STREQUAL declared)
      string(REPLACE ";" ", " d1 "${documented}")
      string(REPLACE ";" ", " d2 "${declared}")
      string(APPEND errors "  ${file}: '${m}' may use '${d1}' there, but lib/CMakeLists.txt declares '${d2}'\n")
    endif()
  endforeach()
  if(NOT seen STREQUAL MODULES)
    string(REPLACE ";" " " s1 "${seen}")
    string(REPLACE ";" " " s2 "${MODULES}")
    string(APPEND errors "  ${file}: the table lists '${s1}'; lib/CMakeLists.txt has '${s2}' (same order)\n")
  endif()
  set(errors "${errors}" PARENT_SCOPE)
endfunction()

check_table(docs/architecture.md "`([a-z_]+)`")
check_table(lib/README.md "\\[([a-z_]+)\\]\\([^)]*\\)")
if(errors)
  message(FATAL_ERROR "attn: the module tables of the docs disagree with lib/CMakeLists.txt:\n${errors}")
endif()
list(LENGTH MODULES n)
message(STATUS "attn: docs/architecture.md and lib/README.md list the ${n} modules of lib/CMakeLists.txt")
