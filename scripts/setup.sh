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
# (with a second architecture's copy installed, e.g. arm64 libfmt-dev for a cross build, the bare
# name is ambiguous to dpkg: ask for this machine's architecture then)
arch=$(dpkg --print-architecture 2>/dev/null || echo "")
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || { [ -n "$arch" ] && dpkg -s "$p:$arch" >/dev/null 2>&1; } || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

# 2. The pretrained model for the "Real heads" lesson and `attn model` (optional:
#    everything else works without it; a failed fetch is reported, not fatal). It downloads
#    while the build compiles (the network and the CPU at once); its lines go to build/fetch-model.log.
mkdir -p build
fetch_pid=""
if [ -x scripts/fetch-model.sh ]; then
  echo "setup: fetching the pretrained model in the background (build/fetch-model.log)"
  scripts/fetch-model.sh >build/fetch-model.log 2>&1 &
  fetch_pid=$!
  # a failed build stops this script (set -e): the download stops with it
  trap '[ -n "$fetch_pid" ] && kill "$fetch_pid" 2>/dev/null; true' EXIT
fi

# 3. Build (Release, build/attn). ATTN_WERROR=ON in the environment makes
#    warnings errors (CI sets it; a user's build does not need it). The tour needs attn alone
#    (about half of the build's steps); `test` builds everything, the tests included.
cmake --preset release -DATTN_WERROR="${ATTN_WERROR:-OFF}" >/dev/null
if [ "$what" = tour ]; then
  target="--target attn_app"
  steps=$(ninja -C build -t commands attn_app 2>/dev/null | wc -l || echo "?")
  echo "setup: building attn for the tour: $steps steps (each [n/N] line below is one; the tests wait for"
  echo "       'scripts/setup.sh test'). On 2 cores this takes several minutes the first time, seconds after."
else
  target=""
  steps=$(ninja -C build -t commands 2>/dev/null | wc -l || echo "?")
  echo "setup: building attn and its tests: $steps steps (each [n/N] line below is one)"
fi
# shellcheck disable=SC2086
cmake --build build -j"$(nproc)" $target

if [ -n "$fetch_pid" ]; then
  if ! kill -0 "$fetch_pid" 2>/dev/null; then :; else echo "setup: waiting for the model download to finish ..."; fi
  fetch_ok=0; wait "$fetch_pid" || fetch_ok=$?
  fetch_pid=""
  if [ "$fetch_ok" -eq 0 ]; then
    tail -n 1 build/fetch-model.log
  else
    echo "setup: model fetch failed (build/fetch-model.log); 'attn model fetch' gets it later" >&2
  fi
fi

# 4. Run.
if [ "$what" = tour ]; then
  exec build/attn tour
else
  exec ctest --test-dir build --output-on-failure -j"$(nproc)"
fi
