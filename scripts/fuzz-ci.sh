#!/usr/bin/env bash
# scripts/fuzz-ci.sh: a short fuzz run, by hand (CI replays the corpora only): every target of
# scripts/fuzz-run.sh, FUZZ_SECONDS in all (default 30, split evenly), in the
# asan-clang build (made or updated by fuzz-run.sh: the fuzz targets only). Skips, saying so, when clang is not
# installed; a failure fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++ >/dev/null 2>&1; then
    echo "fuzz-ci: skipped: clang++ not installed (apt-get install clang)"
    exit 0
fi
exec scripts/fuzz-run.sh -t "${FUZZ_SECONDS:-30}"
