# cmake -P cmake/check_layers.cmake: fails when a library module includes a
# header of a module above it (see the module table in lib/CMakeLists.txt).
#
# Inputs (-D): SOURCE_DIR, MODULES ("core;cpu;..."), and DEPS_<module> for each
# module: the modules it may use directly. What a module may include is itself
# and everything reachable through DEPS. The umbrella attn/attn.hpp may not be
# included inside lib/ at all. The compiler enforces the same rule (a module's
# include path holds only its own and its dependencies' headers); this check
# says which line broke it, in one message per offence.
#
# Declared = used: a module must include a header of every module in its DEPS
# (a dependency nothing includes is a stale line of the table, and it widens the
# include path for nothing).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" MODULES "${MODULES}")

function(closure out m)
  set(seen "${m}")
  set(todo "${m}")
  while(todo)
    list(POP_FRONT todo cur)
    string(REPLACE "," ";" ds "${DEPS_${cur}}")
    foreach(d IN LISTS ds)
      if(NOT d IN_LIST seen)
        list(APPEND seen ${d})
        list(APPEND todo ${d})
      endif()
    endforeach()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

set(errors "")
set(checked 0)
foreach(m IN LISTS MODULES)
  closure(allowed ${m})
  set(used "")
  file(GLOB_RECURSE files "${SOURCE_DIR}/lib/${m}/*.hpp" "${SOURCE_DIR}/lib/${m}/*.cpp"
       "${SOURCE_DIR}/lib/${m}/*.cu" "${SOURCE_DIR}/lib/${m}/*.cuh")
  foreach(f IN LISTS files)
    math(EXPR checked "${checked} + 1")
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    file(STRINGS "${f}" flags REGEX "\"--[a-z]")
    foreach(line IN LISTS flags)
      if(NOT line MATCHES "^[ \t]*//")
        string(STRIP "${line}" line)
        string(APPEND errors "  ${rel}: names a command-line flag (${line}); library errors stay neutral\n")
      endif()
    endforeach()
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]attn/")
    foreach(line IN LISTS lines)
      if(line MATCHES "attn/attn\\.hpp")
        string(APPEND errors "  ${rel}: includes the umbrella attn/attn.hpp; include the module header it needs\n")
      elseif(line MATCHES "attn/([a-z_]+)/")
        set(target "${CMAKE_MATCH_1}")
        list(APPEND used ${target})
        if(NOT target IN_LIST MODULES)
          string(APPEND errors "  ${rel}: includes attn/${target}/, which is no module of lib/\n")
        elseif(NOT target IN_LIST allowed)
          string(APPEND errors "  ${rel}: module '${m}' includes '${target}' (${line}); '${m}' may use only: ${allowed}\n")
        endif()
      else()
        string(APPEND errors "  ${rel}: ${line}: headers live in attn/<module>/\n")
      endif()
    endforeach()
  endforeach()
  string(REPLACE "," ";" declared "${DEPS_${m}}")
  foreach(d IN LISTS declared)
    if(NOT d IN_LIST used)
      string(APPEND errors "  lib/${m}: module '${m}' declares '${d}' as a dependency but includes none of its headers; drop it from the table\n")
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "check_layers: no source files found under ${SOURCE_DIR}/lib (wrong SOURCE_DIR?)")
endif()
if(errors)
  message(FATAL_ERROR "attn: the library breaks its architecture (lib/CMakeLists.txt has the module table):\n${errors}")
endif()
message(STATUS "attn: layering holds and no flag is named over ${checked} files of lib/")
