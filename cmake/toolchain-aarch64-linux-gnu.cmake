# Cross build for 64-bit Arm Linux (aarch64) with Debian's cross compiler, run under
# user-mode QEMU: the preset cross-aarch64 (CMakePresets.json) uses this file.
#
#   apt-get install g++-aarch64-linux-gnu qemu-user
#   dpkg --add-architecture arm64 && apt-get update && apt-get install libfmt-dev:arm64
#
# fmt is the one compiled library the project links (Debian's arm64 package, under
# /usr/lib/aarch64-linux-gnu); Eigen, CLI11, nlohmann_json and doctest are headers,
# found where the host's packages put them (/usr/include, /usr/share, /usr/lib/cmake).
# The cross compiler searches /usr/include after its own headers, so the host's C
# library headers never shadow the target's.
#
# CMAKE_CROSSCOMPILING_EMULATOR makes ctest (and doctest's test discovery at build
# time) run the aarch64 binaries through qemu-aarch64. The programs find their loader
# and libraries where Debian's arm64 packages put them (/lib/ld-linux-aarch64.so.1,
# /usr/lib/aarch64-linux-gnu: libc6, libstdc++6 and libfmt9, installed with
# libfmt-dev:arm64). Not the cross toolchain's copy of the C library (qemu-aarch64
# -L /usr/aarch64-linux-gnu, Debian 12's libc6-arm64-cross 2.36-8cross1): under QEMU
# 7.2 its pthread_create never returned, so every parallel_for hung.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

find_program(ATTN_QEMU_AARCH64 qemu-aarch64)
if(ATTN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ATTN_QEMU_AARCH64})
endif()

# Programs (python, chromium) are the host's; libraries and headers the target's
# where it has them, else the host's headers-only packages.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config (cpp-httplib, for attn serve) looks at the target's packages only: without
# an arm64 cpp-httplib the cross build has no serve, rather than linking the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
