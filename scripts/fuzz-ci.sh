#!/usr/bin/env bash
# scripts/fuzz-ci.sh: the short fuzz run .ci/run calls (FUZZ_SECONDS, default 30,
# split over the safetensors, dump and tokenizer targets). Skips, saying so,
# when clang is not installed; a crash fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v "${FUZZ_CXX:-clang++}" >/dev/null 2>&1; then
    echo "fuzz-ci: skipped: clang++ not installed (apt-get install clang)"
    exit 0
fi
exec scripts/fuzz-safetensors.sh "${FUZZ_SECONDS:-30}"
