#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU checks of attn in one command, for a machine with an
# NVIDIA GPU, nvcc, CMake, Ninja and (optionally) PyTorch, but no -dev packages and no
# network. Builds with CUDA, runs the parity tests (every CUDA kernel against the CPU
# reference), times the kernels and PyTorch's scaled_dot_product_attention on the same
# sizes, and prints a short table last; then compute-sanitizer's memcheck and racecheck on
# a part of the parity cases. Budget: under 8 minutes on an H200 (every step has a timeout).
#
#   bash scripts/pack-gpu-deps.sh     # once, on a machine that has the -dev packages
#   bash scripts/gpu-check.sh         # on the GPU machine, with .deps/ carried along
#
# Environment: ATTN_DEPS_DIR (default .deps), ATTN_GPU_BUILD (default build-gpu),
# ATTN_GPU_T (default 4096), ATTN_GPU_BH ("B H", default "4 16"), ATTN_GPU_BUILD_TIMEOUT
# (seconds, default 240), ATTN_GPU_BIN (a folder with attn and attn_tests built elsewhere,
# e.g. a portable CUDA build: no build here when they start), ATTN_GPU_NO_SANITIZER (skip
# compute-sanitizer), ATTN_GPU_NCU (profile the flash kernels with ncu), OUT (the logs, as one
# archive gpu-check-logs.tgz).
# Exit status: 0 when the build and every parity test passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEPS=${ATTN_DEPS_DIR:-$PWD/.deps}
BUILD=${ATTN_GPU_BUILD:-build-gpu}
T=${ATTN_GPU_T:-4096}
read -r B H <<<"${ATTN_GPU_BH:-4 16}"
LOGS="$BUILD/gpu-check"
JOBS=$(nproc 2>/dev/null || echo 4)
step() { echo; echo "== $* ($(( $(date +%s) - T0 )) s)"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
grep -m1 "model name" /proc/cpuinfo; echo "cores: $JOBS"
{ nvcc --version | tail -1; cmake --version | head -1; } 2>/dev/null || echo "gpu-check: no nvcc or cmake on PATH (only prebuilt binaries can run)"

find_cublas() {
    # a binary built elsewhere needs libcublas.so.13 / libcublasLt.so.13: the toolkit's, or the
    # copy inside PyTorch's nvidia-cublas wheel
    local d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
             $(python3 -c 'import nvidia, os; [print(os.path.join(p, s, "lib")) for p in nvidia.__path__ for s in ("cu13", "cublas")]' 2>/dev/null); do
        [[ -e "$d/libcublas.so.13" ]] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
}

# ATTN_GPU_BIN=DIR: binaries built elsewhere (attn and attn_tests, e.g. a portable CUDA build
# carried along); used when both start here, else this script builds its own.
ATTN=""; TESTS=""
if [[ -n "${ATTN_GPU_BIN:-}" ]]; then
    step "prebuilt binaries from $ATTN_GPU_BIN"
    find_cublas
    if "$ATTN_GPU_BIN/attn" --version && "$ATTN_GPU_BIN/attn_tests" -ltc >/dev/null; then
        ATTN="$ATTN_GPU_BIN/attn"; TESTS="$ATTN_GPU_BIN/attn_tests"
    else
        ldd "$ATTN_GPU_BIN/attn" | grep -i "not found"; echo "gpu-check: the prebuilt binaries do not start here; building"
    fi
fi
if [[ -z "$ATTN" ]]; then
    step "configure and build (ATTN_CUDA=ON, $JOBS jobs)"
    [[ -d "$DEPS/lib/cmake" ]] || echo "gpu-check: $DEPS missing; relying on system packages (see scripts/pack-gpu-deps.sh)"
    GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
    mkdir -p "$LOGS"
    timeout 60 cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DATTN_CUDA=ON -DATTN_WERROR=OFF \
        -DCMAKE_PREFIX_PATH="$DEPS" >"$LOGS/configure.log" 2>&1 || { cat "$LOGS/configure.log"; echo "gpu-check: configure failed"; exit 1; }
    grep -E "attn: CUDA backend" "$LOGS/configure.log"
    if ! timeout "${ATTN_GPU_BUILD_TIMEOUT:-240}" cmake --build "$BUILD" -j "$JOBS" --target attn_tests attn_app >"$LOGS/build.log" 2>&1; then
        tail -40 "$LOGS/build.log"; echo "gpu-check: build failed"; exit 1
    fi
    echo "built in $(( $(date +%s) - T0 )) s"
    ATTN="$BUILD/attn"; TESTS="$BUILD/tests/attn_tests"
fi
mkdir -p "$LOGS"
# copy the logs to $OUT as they are written, so a run cut short still returns them
# (one archive: the device tool returns at most 8 files)
save() { if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then tar czf "$OUT/gpu-check-logs.tgz" -C "$LOGS" . 2>/dev/null; fi; true; }

step "parity tests (doctest, every CUDA kernel against the CPU reference)"
PARITY=0
timeout 90 "$TESTS" -tc="cuda*,parity*,backend table*,attention(): refuses*,gpu mask rule*" --duration=true >"$LOGS/parity.log" 2>&1 || PARITY=1
grep -E "^\[doctest\] (test cases|assertions)|^SKIPPED|ERROR|error:|logged:|values:|MESSAGE|worst" "$LOGS/parity.log" | head -60
PARITY_LINE=$(grep -E "^\[doctest\] test cases" "$LOGS/parity.log" | tail -1)
if grep -q "^SKIPPED: cuda parity" "$LOGS/parity.log"; then
    PARITY=1; PARITY_LINE="$PARITY_LINE -- but the GPU cases SKIPPED: no usable GPU, nothing was checked"
fi

save

# The command line on the GPU: the same layer through each backend (the dump's output against
# the CPU reference's), the readable path's trace, and refusals that must be one line, exit 2.
step "the command line on the GPU"
CLI_OK=0
cli() {  # EXPECTED_EXIT DESCRIPTION -- attn arguments
    local want=$1 what=$2; shift 3
    "$ATTN" "$@" >"$LOGS/cli.out" 2>"$LOGS/cli.err"; local rc=$?
    local line; line=$(tail -n1 "$LOGS/cli.err")
    if [[ $rc -eq $want && ( $want -eq 0 || $(wc -l <"$LOGS/cli.err") -eq 1 ) ]]; then echo "ok   $what (exit $rc) ${line:0:150}"
    else echo "FAIL $what: exit $rc, want $want: ${line:0:200}"; CLI_OK=1; fi
    { echo "== $what: attn $*"; cat "$LOGS/cli.out" "$LOGS/cli.err"; } >>"$LOGS/cli.log"
}
: >"$LOGS/cli.log"
FW=(forward --batch 2 --seq 100 --d-model 64 --heads 4 --mask causal+pad:100,37 --seed 3)
cli 0 "reference dump" -- "${FW[@]}" --dump "$LOGS/ref.json"
for impl in cuda-naive cuda-flash cuda-flash-f16 cuda-flash-bf16; do
    cli 0 "$impl dump" -- "${FW[@]}" --impl "$impl" --dump "$LOGS/$impl.json"
done
python3 - "$LOGS" <<'PY'
import json, sys
d = sys.argv[1]
ref = json.load(open(f"{d}/ref.json"))["tensors"]["out"]["data"]
for impl, tol in (("cuda-naive", 1e-5), ("cuda-flash", 1e-5), ("cuda-flash-f16", 5e-3), ("cuda-flash-bf16", 3e-2)):
    try:
        got = json.load(open(f"{d}/{impl}.json"))["tensors"]["out"]["data"]
    except (OSError, ValueError, KeyError) as e:
        print(f"FAIL {impl}: no dump ({e})"); continue
    diff = max(abs(a - b) for a, b in zip(got, ref))
    print(f"{'ok  ' if diff <= tol else 'FAIL'} {impl} out vs reference: max |diff| {diff:.2e} (bound {tol:g})")
PY
cli 0 "cuda-naive --trace" -- forward --impl cuda-naive --seq 6 --trace
grep -c "shape\|\[" "$LOGS/cli.out" | sed 's/^/     trace lines with shapes: /'
cli 2 "no backward on the GPU" -- "${FW[@]}" --impl cuda-flash --backward
cli 2 "Dk above the tensor-core limit" -- forward --impl cuda-flash-f16 --seq 16 --d-model 384 --heads 2
# a (16, 1e5, 1e5) score matrix is 640 GB: the readable path's case fails and is reported, the run goes on
cli 0 "a score matrix larger than the GPU (bench notes it)" -- bench --impl cuda-naive,cuda-flash-bf16 --heads 16 --seq 100000 --d-k 64 --reps 1 --warmup 0 --yes
grep -E "cuda-naive|cuda-flash-bf16" "$LOGS/cli.out" | sed 's/^/     /' | head -4
save
# One attn bench run: LABEL (causal, w8: 8-warp tensor-core kernels), Dk, impl list; one JSON
# line per result for the summary. attn bench times the GPU backends with cudaEvents around
# the kernels alone (median of the timed calls).
bench() {
    local label=$1 dk=$2 impls=$3 env=() extra=()
    [[ $label == *causal* ]] && extra=(--causal)
    [[ $label == *w8* ]] && env=(ATTN_CUDA_MMA_WARPS=8)
    env "${env[@]}" timeout 60 "$ATTN" bench --batch "$B" --heads "$H" --seq "$T" --d-k "$dk" --reps 10 --warmup 2 \
        --impl "$impls" --yes "${extra[@]}" --json >"$LOGS/bench-$label-$dk.json" 2>>"$LOGS/bench.err"
    echo "bench $label Dk=$dk exit $?"
    python3 - "$LOGS/bench-$label-$dk.json" "$label" >>"$LOGS/bench.jsonl" 2>>"$LOGS/bench.err" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    print(json.dumps({"impl": r["impl"], "variant": sys.argv[2], "Dk": r["d_k"], "B": r["batch"], "H": r["heads"],
                      "T": r["seq"], "ms": r["seconds"] * 1e3, "tflops": r["gflops"] / 1e3, "reps": len(r["times"])}))
for s in doc["skipped"]:
    print("skipped:", s["impl"], s["reason"], file=sys.stderr)
PY
}
step "benchmark: attn bench --impl cuda-*, B=$B H=$H T=$T, Dk 64 and 128; causal; 8 warps"
: >"$LOGS/bench.jsonl"
ALL=cuda-naive,cuda-flash,cuda-flash-f16,cuda-flash-bf16
bench plain 64 "$ALL"; bench plain 128 "$ALL"
bench causal 64 "$ALL"
bench w8 64 cuda-flash-f16,cuda-flash-bf16; bench w8 128 cuda-flash-f16,cuda-flash-bf16
cat "$LOGS/bench.err"; save

step "benchmark: PyTorch scaled_dot_product_attention on the same sizes"
timeout 60 python3 - "$B" "$H" "$T" >"$LOGS/sdpa.jsonl" 2>"$LOGS/sdpa.err" <<'PY'
import json, sys
B, H, T = (int(x) for x in sys.argv[1:4])
import torch
import torch.nn.functional as F
assert torch.cuda.is_available(), "torch sees no GPU"
dev = torch.device("cuda")
for variant, dk, causal in (("plain", 64, False), ("plain", 128, False), ("causal", 64, True)):
    for name, dt in (("float32", torch.float32), ("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        g = torch.Generator(device=dev).manual_seed(0)
        q, k, v = (torch.randn(B, H, T, dk, device=dev, dtype=dt, generator=g) for _ in range(3))
        for _ in range(2):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); F.scaled_dot_product_attention(q, k, v, is_causal=causal); b.record(); b.synchronize()
            times.append(a.elapsed_time(b))
        ms = sorted(times)[len(times) // 2]
        pairs = T * (T + 1) / 2 if causal else T * T  # attn bench counts the allowed pairs only
        flops = 2.0 * B * H * pairs * (dk + dk)
        print(json.dumps({"impl": "torch-sdpa-" + name, "variant": variant, "dtype": name, "Dk": dk, "ms": ms,
                          "tflops": flops / (ms * 1e-3) / 1e12, "torch": torch.__version__}), flush=True)
PY
echo "sdpa exit $?"; tail -3 "$LOGS/sdpa.err"; save

step "summary"
python3 - "$LOGS/bench.jsonl" "$LOGS/sdpa.jsonl" "$PARITY_LINE" >"$LOGS/table.txt" <<'PY'
import json, sys
def load(p):
    try:
        return [json.loads(l) for l in open(p) if l.strip().startswith("{")]
    except OSError:
        return []
ours, sdpa = load(sys.argv[1]), load(sys.argv[2])
dtype = {"cuda-naive": "float32", "cuda-flash": "float32", "cuda-flash-f16": "float16", "cuda-flash-bf16": "bfloat16"}
sd = {(r["variant"], r["dtype"], r["Dk"]): r for r in sdpa}
naive = {(r["variant"], r["Dk"]): r for r in ours if r["impl"] == "cuda-naive"}
print(f"parity: {sys.argv[3] or 'no result'}")
if ours:
    r0 = ours[0]
    print(f"B={r0['B']} H={r0['H']} T={r0['T']}; median of {r0['reps']} calls on both sides; "
          "causal FLOPs count the allowed pairs; w8 = the tensor-core kernels with 8 warps")
print(f"{'impl':<20}{'variant':>8}{'Dk':>5}{'ms':>10}{'TFLOP/s':>10}{'vs SDPA':>9}{'vs naive':>10}")
for r in ours:
    s = sd.get(("causal" if "causal" in r["variant"] else "plain", dtype.get(r["impl"]), r["Dk"]))
    vs = f"{r['tflops'] / s['tflops']:.2f}x" if s else "-"
    n = naive.get((r["variant"], r["Dk"]))
    vn = f"{n['ms'] / r['ms']:.1f}x" if n else "-"
    print(f"{r['impl']:<20}{r['variant']:>8}{r['Dk']:>5}{r['ms']:>10.3f}{r['tflops']:>10.1f}{vs:>9}{vn:>10}")
for r in sdpa:
    print(f"{r['impl']:<20}{r['variant']:>8}{r['Dk']:>5}{r['ms']:>10.3f}{r['tflops']:>10.1f}{'1.00x':>9}{'':>10}")
PY
cat "$LOGS/table.txt"; save

# Memory and race checks of the kernels (compute-sanitizer, where the runtime allows it),
# on the parity cases: small tensors, every mask and option. Last, since they are slow.
if [[ -z "${ATTN_GPU_NO_SANITIZER:-}" ]] && command -v compute-sanitizer >/dev/null; then
    step "compute-sanitizer memcheck (the fp16 grid: odd sizes, ragged tiles; NaN keys and the record, every kernel)"
    timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 "$TESTS" \
        -tc="cuda parity: cuda-flash-f16*,cuda parity: the naive*,cuda parity: NaN*" >"$LOGS/memcheck.log" 2>&1
    echo "memcheck exit $? (0 clean, 9 errors found, 124 timed out)"; grep -E "ERROR SUMMARY|^\[doctest\] test cases" "$LOGS/memcheck.log"; save
    step "compute-sanitizer racecheck (shared memory; every kernel at T 20 and T 256)"
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 "$TESTS" \
        -tc="cuda parity: NaN*,cuda parity: benchmark*" >"$LOGS/racecheck.log" 2>&1
    echo "racecheck exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[doctest\] test cases" "$LOGS/racecheck.log"; save
fi
# Where the time goes in the flash kernels (Nsight Compute, where the runtime allows it): one
# launch each of cuda-flash and cuda-flash-f16 at Dk 64, T 4096: throughput, occupancy, stalls.
if [[ -n "${ATTN_GPU_NCU:-}" ]] && command -v ncu >/dev/null; then
    step "ncu: one launch of each flash kernel"
    timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        -k regex:flash -c 2 "$ATTN" bench --batch "$B" --heads "$H" --seq "$T" --d-k 64 --reps 1 --warmup 0 \
        --impl cuda-flash,cuda-flash-f16 --yes >"$LOGS/ncu.log" 2>&1
    echo "ncu exit $?"; grep -E "flash_|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Block Limit|Issue Slots Busy|Stall|Executed Ipc" "$LOGS/ncu.log" | head -60; save
fi
echo "gpu-check: done in $(( $(date +%s) - T0 )) s; logs in $LOGS"
exit $PARITY
