#!/usr/bin/env bash
# The 64-bit Arm (aarch64) cross build and its tests under QEMU (docs/kernels.md), on an
# x86-64 Debian 12 machine:
#   scripts/cross-aarch64.sh               install what is missing, build attn_tests and
#                                          attn for aarch64 (preset cross-aarch64:
#                                          build-aarch64/), run the tests under
#                                          qemu-aarch64 and attn once
#   scripts/cross-aarch64.sh --tests-only  (CI) attn_tests alone: the modules its files use,
#                                          not attn (every module, the lessons: twice the
#                                          compile time); its command-line cases are left out
# Correctness only: under QEMU's translation no timing means anything.
set -euo pipefail
cd "$(dirname "$0")/.."
app=1
case "${1:-}" in
  "") ;;
  --tests-only) app=0 ;;
  *) echo "usage: scripts/cross-aarch64.sh [--tests-only]" >&2; exit 2 ;;
esac

# 1. The cross compiler, QEMU, and the arm64 fmt (with the arm64 C and C++ runtime
#    libraries the tests run with); Eigen, CLI11, nlohmann_json and doctest are headers.
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=""
for p in g++-aarch64-linux-gnu qemu-user; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
  missing="$missing libfmt-dev:arm64"
elif ! dpkg -s libfmt-dev:arm64 >/dev/null 2>&1; then
  missing="$missing libfmt-dev:arm64"
fi
if [ -n "$missing" ]; then
  echo "cross-aarch64: installing$missing"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# 2. Build: attn_tests from the preset's test files (ATTN_TEST_ONLY) and the modules they
#    use (ATTN_TEST_ONLY_MODULES); attn unless --tests-only.
cmake --preset cross-aarch64 >/dev/null
targets="attn_tests"
[ "$app" -eq 1 ] && targets="$targets attn_app"
cmake --build build-aarch64 -j"$(nproc)" --target $targets

# 3. Run under QEMU. Not run: the packaging, fuzz-replay, browser and layering entries
#    (their targets are not built here, or they test no aarch64 code), and one test QEMU itself
#    cannot run: a fork() from a process with threads (parallel_for's forked-child case)
#    aborts QEMU 7.2's user mode ("cpu == current_cpu" assertion), not the program.
#    Without attn, the cases that run it (named "attn ...", and the bf16 generic-path one) are left out.
skip="^parallel_for: a forked child"
[ "$app" -eq 1 ] || skip="$skip|^attn |^flash-bf16 runs on every CPU"
ctest --test-dir build-aarch64 --output-on-failure -j"$(nproc)" -LE "packaging|fuzz|browser|architecture" -E "$skip"
# The run-time choice: neon on aarch64, and ATTN_ISA=generic takes it away (the one test case
# then skips, exit code 77).
rc=0; ATTN_ISA=generic qemu-aarch64 build-aarch64/tests/attn_tests \
  "--test-case=flash: an AArch64 CPU runs the neon kernel*" >/dev/null || rc=$?
[ "$rc" -eq 77 ] || { echo "cross-aarch64: ATTN_ISA=generic did not take the neon kernel away (exit $rc)" >&2; exit 1; }
rc=0; ATTN_ISA=generic qemu-aarch64 build-aarch64/tests/attn_tests \
  "--test-case=cpu gemm: an AArch64 CPU runs the neon GEMMs and row kernels*" >/dev/null || rc=$?
[ "$rc" -eq 77 ] || { echo "cross-aarch64: ATTN_ISA=generic did not take the neon GEMMs and row kernels away (exit $rc)" >&2; exit 1; }
[ "$app" -eq 1 ] || exit 0
# attn itself: the neon kernels chosen at run time, and ATTN_ISA=generic forcing the generic ones
version=$(build-aarch64/attn-emulated --version)
echo "$version" | grep "^kernels"
echo "$version" | grep -q "^kernels neon: flash neon,.*, encoder GEMM neon, training GEMM neon$"
ATTN_ISA=generic build-aarch64/attn-emulated --version |
  grep -q "^kernels generic (ATTN_ISA=generic; CPU: neon): flash generic,.*, encoder GEMM eigen, training GEMM eigen$"
build-aarch64/attn-emulated forward --impl flash --seq 40 --mask causal | tail -1
