#!/usr/bin/env bash
# scripts/pack-gpu-deps.sh: copy attn's header-only dependencies into .deps/ (git-ignored)
# so a machine without Debian's -dev packages (the GPU machine) can configure attn.
#
#   bash scripts/pack-gpu-deps.sh            # here, where libcli11-dev etc. are installed
#   cmake -S . -B build-gpu -DCMAKE_PREFIX_PATH=$PWD/.deps ...   # there (scripts/gpu-check.sh does it)
#
# .deps/include/   CLI/, Eigen/ and unsupported/ (under eigen3/), nlohmann/, doctest/, fmt/ (headers only)
# .deps/lib/cmake/ one minimal <Package>Config.cmake (+ version file) per package that
#                  defines the same imported target as the real one. fmt is made
#                  header-only (FMT_HEADER_ONLY), so no compiled libfmt is needed there.
# Size: about 8 MiB (the device tool carries up to 64 MiB with the working tree).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${ATTN_DEPS_FROM:-/usr/include}
DEST=${1:-.deps}

need() { [[ -e "$1" ]] || { echo "pack-gpu-deps: $1 is missing (apt-get install $2)" >&2; exit 2; }; }
need "$SRC/CLI/CLI.hpp" libcli11-dev
need "$SRC/eigen3/Eigen/Core" libeigen3-dev
need "$SRC/nlohmann/json.hpp" nlohmann-json3-dev
need "$SRC/doctest/doctest.h" doctest-dev
need "$SRC/fmt/format-inl.h" libfmt-dev
need /usr/lib/cmake/doctest/doctest.cmake doctest-dev

rm -rf "$DEST"
mkdir -p "$DEST/include/eigen3" "$DEST/lib/cmake"
cp -r "$SRC/CLI" "$SRC/nlohmann" "$SRC/doctest" "$SRC/fmt" "$DEST/include/"
cp -r "$SRC/eigen3/Eigen" "$SRC/eigen3/unsupported" "$DEST/include/eigen3/"  # unsupported/: SpecialFunctions (erf, BERT's GELU)

# versions, read from the headers
macro() { grep -m1 -E "#define $2[[:space:]]" "$1" | awk '{print $3}' | tr -d '"'; }
EIGEN_V="$(macro "$SRC/eigen3/Eigen/src/Core/util/Macros.h" EIGEN_WORLD_VERSION).$(macro "$SRC/eigen3/Eigen/src/Core/util/Macros.h" EIGEN_MAJOR_VERSION).$(macro "$SRC/eigen3/Eigen/src/Core/util/Macros.h" EIGEN_MINOR_VERSION)"
NJ_H="$SRC/nlohmann/detail/abi_macros.hpp"; [[ -f "$NJ_H" ]] || NJ_H="$SRC/nlohmann/json.hpp"
NJ_V="$(macro "$NJ_H" NLOHMANN_JSON_VERSION_MAJOR).$(macro "$NJ_H" NLOHMANN_JSON_VERSION_MINOR).$(macro "$NJ_H" NLOHMANN_JSON_VERSION_PATCH)"
FMT_N=$(macro "$SRC/fmt/core.h" FMT_VERSION)
FMT_V="$((FMT_N / 10000)).$((FMT_N / 100 % 100)).$((FMT_N % 100))"
CLI_V=$(macro "$SRC/CLI/Version.hpp" CLI11_VERSION)
DT_V="$(macro "$SRC/doctest/doctest.h" DOCTEST_VERSION_MAJOR).$(macro "$SRC/doctest/doctest.h" DOCTEST_VERSION_MINOR).$(macro "$SRC/doctest/doctest.h" DOCTEST_VERSION_PATCH)"

# package NAME VERSION TARGET INCLUDE_SUBDIR [COMPILE_DEFINITIONS]
package() {
    local name=$1 version=$2 target=$3 sub=$4 defs=${5:-}
    local dir="$DEST/lib/cmake/$name"
    mkdir -p "$dir"
    cat >"$dir/${name}Config.cmake" <<EOF
# Minimal config written by scripts/pack-gpu-deps.sh: headers only, from .deps/include.
get_filename_component(_attn_deps_inc "\${CMAKE_CURRENT_LIST_DIR}/../../../include${sub}" ABSOLUTE)
if(NOT TARGET ${target})
  add_library(${target} INTERFACE IMPORTED)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${_attn_deps_inc}")
  if(NOT "${defs}" STREQUAL "")
    set_target_properties(${target} PROPERTIES INTERFACE_COMPILE_DEFINITIONS "${defs}")
  endif()
endif()
set(${name}_FOUND TRUE)
set(${name}_VERSION ${version})
EOF
    cat >"$dir/${name}ConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "${version}")
if(PACKAGE_FIND_VERSION AND PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}
package CLI11 "$CLI_V" CLI11::CLI11 ""
package Eigen3 "$EIGEN_V" Eigen3::Eigen "/eigen3"
package nlohmann_json "$NJ_V" nlohmann_json::nlohmann_json ""
package fmt "$FMT_V" fmt::fmt "" "FMT_HEADER_ONLY=1"
package doctest "$DT_V" doctest::doctest ""
# tests/CMakeLists.txt includes ${doctest_DIR}/doctest.cmake (doctest_discover_tests)
cp /usr/lib/cmake/doctest/doctest.cmake /usr/lib/cmake/doctest/doctestAddTests.cmake "$DEST/lib/cmake/doctest/"

echo "pack-gpu-deps: wrote $DEST ($(du -sh "$DEST" | cut -f1)): CLI11 $CLI_V, Eigen $EIGEN_V, nlohmann_json $NJ_V, fmt $FMT_V (header-only), doctest $DT_V"
