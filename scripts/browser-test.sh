#!/bin/sh
# Drives headless Chromium over attn's --html pages (scripts/browser_test.py):
# no console error, no network request, every head drawn, the hover's weight,
# the XSS probe inert, the zh UI; screenshots (PNG) land in OUT for a person.
#   scripts/browser-test.sh [ATTN_BINARY] [OUT]   (default: build/attn, build/browser)
# Exits 77 (skipped) when no Chromium is installed: apt-get install chromium.
set -eu
here=$(dirname "$0")
attn=${1:-build/attn}
out=${2:-build/browser}
exec python3 "$here/browser_test.py" --attn "$attn" --out "$out"
