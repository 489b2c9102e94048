#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a working attn:
#   scripts/setup.sh tour   install what is missing, build, run the guided tour
#   scripts/setup.sh test   install what is missing, build, run every test
# Safe to run again: installs only missing packages, rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-tour}
case "$what" in tour|test) ;; *) echo "usage: scripts/setup.sh tour|test" >&2; exit 2 ;; esac

# 1. Debian packages the build needs (found by CMake's find_package).
pkgs="cmake ninja-build g++ pkg-config libcli11-dev libeigen3-dev libfmt-dev nlohmann-json3-dev doctest-dev libcpp-httplib-dev python3 python3-pip"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

# 2. The pretrained model for the "Real heads" lesson and `attn model` (optional:
#    everything else works without it; a failed fetch is reported, not fatal).
if [ -x scripts/fetch-model.sh ]; then
  scripts/fetch-model.sh || echo "setup: model fetch failed; 'attn model' and the Real heads lesson will say how to get it" >&2
fi

# 3. Build (Release, build/attn). ATTN_WERROR=ON in the environment makes
#    warnings errors (CI sets it; a user's build does not need it).
cmake --preset release -DATTN_WERROR="${ATTN_WERROR:-OFF}" >/dev/null
cmake --build build -j"$(nproc)"

# 4. Run.
if [ "$what" = tour ]; then
  exec build/attn tour
else
  exec ctest --test-dir build --output-on-failure -j"$(nproc)"
fi
