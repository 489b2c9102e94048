#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU checks of attn in one command, for a machine with an
# NVIDIA GPU, nvcc, CMake, Ninja and (optionally) PyTorch, but no -dev packages and no
# network. Builds with CUDA, runs the parity tests (every CUDA kernel against the CPU
# reference), times the kernels and PyTorch's scaled_dot_product_attention on the same
# sizes, and prints a short table last. Budget: under 8 minutes on an H200 (every step
# has a timeout; 9 minutes at the very worst).
#
#   bash scripts/pack-gpu-deps.sh     # once, on a machine that has the -dev packages
#   bash scripts/gpu-check.sh         # on the GPU machine, with .deps/ carried along
#
# Environment: ATTN_DEPS_DIR (default .deps), ATTN_GPU_BUILD (default build-gpu),
# ATTN_GPU_T (default 4096), ATTN_GPU_BH ("B H", default "4 16"), ATTN_GPU_BUILD_TIMEOUT
# (seconds, default 240), OUT (copies of the logs).
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
nvcc --version 2>/dev/null | tail -1 || { echo "gpu-check: nvcc not found on PATH"; exit 1; }
cmake --version | head -1

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

step "parity tests (doctest, every CUDA kernel against the CPU reference)"
PARITY=0
timeout 90 "$BUILD/tests/attn_tests" -tc="cuda*" --duration=true >"$LOGS/parity.log" 2>&1 || PARITY=1
grep -E "^\[doctest\] (test cases|assertions)|^SKIPPED|ERROR|error:|logged:|values:" "$LOGS/parity.log" | head -60
PARITY_LINE=$(grep -E "^\[doctest\] test cases" "$LOGS/parity.log" | tail -1)
if grep -q "^SKIPPED: cuda parity" "$LOGS/parity.log"; then
    PARITY=1; PARITY_LINE="$PARITY_LINE -- but the GPU cases SKIPPED: no usable GPU, nothing was checked"
fi

step "benchmark: attn bench --impl cuda-*, B=$B H=$H T=$T, Dk=64,128, non-causal"
# attn bench times the GPU backends with cudaEvents around the kernels alone;
# one JSON line per (backend, Dk) for the summary below.
: >"$LOGS/bench.jsonl"
for DK in 64 128; do
    timeout 90 "$BUILD/attn" bench --batch "$B" --heads "$H" --seq "$T" --d-k "$DK" --reps 10 --warmup 2 \
        --impl cuda-naive,cuda-flash,cuda-flash-f16,cuda-flash-bf16 --json >"$LOGS/bench-$DK.json" 2>>"$LOGS/bench.err"
    echo "bench Dk=$DK exit $?"
    python3 - "$LOGS/bench-$DK.json" >>"$LOGS/bench.jsonl" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    print(json.dumps({"impl": r["impl"], "Dk": r["d_k"], "B": r["batch"], "H": r["heads"], "T": r["seq"],
                      "mean_ms": r["seconds"] * 1e3, "tflops": r["gflops"] / 1e3, "reps": len(r["times"]),
                      "device": "gpu"}))
for s in doc["skipped"]:
    print("skipped:", s["impl"], s["reason"], file=sys.stderr)
PY
done
cat "$LOGS/bench.err"

step "benchmark: PyTorch scaled_dot_product_attention on the same sizes"
timeout 60 python3 - "$B" "$H" "$T" >"$LOGS/sdpa.jsonl" 2>"$LOGS/sdpa.err" <<'PY'
import json, sys
B, H, T = (int(x) for x in sys.argv[1:4])
import torch
import torch.nn.functional as F
assert torch.cuda.is_available(), "torch sees no GPU"
dev = torch.device("cuda")
for dk in (64, 128):
    for name, dt in (("float32", torch.float32), ("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        g = torch.Generator(device=dev).manual_seed(0)
        q, k, v = (torch.randn(B, H, T, dk, device=dev, dtype=dt, generator=g) for _ in range(3))
        for _ in range(2):
            F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); F.scaled_dot_product_attention(q, k, v); b.record(); b.synchronize()
            times.append(a.elapsed_time(b))
        ms = sum(times) / len(times)
        flops = 2.0 * B * H * T * T * (dk + dk)
        print(json.dumps({"impl": "torch-sdpa-" + name, "dtype": name, "Dk": dk, "mean_ms": ms,
                          "tflops": flops / (ms * 1e-3) / 1e12, "torch": torch.__version__}), flush=True)
PY
echo "sdpa exit $?"; tail -3 "$LOGS/sdpa.err"

step "summary"
python3 - "$LOGS/bench.jsonl" "$LOGS/sdpa.jsonl" "$PARITY_LINE" >"$LOGS/table.txt" <<'PY'
import json, sys
def load(p):
    try:
        return [json.loads(l) for l in open(p) if l.strip().startswith("{")]
    except OSError:
        return []
ours, sdpa = load(sys.argv[1]), load(sys.argv[2])
ref_dtype = {"cuda-naive": "float32", "cuda-flash": "float32", "cuda-flash-f16": "float16", "cuda-flash-bf16": "bfloat16"}
sd = {(r["dtype"], r["Dk"]): r for r in sdpa}
naive = {r["Dk"]: r for r in ours if r["impl"] == "cuda-naive"}
print(f"parity: {sys.argv[3] or 'no result'}")
if ours:
    r0 = ours[0]
    print(f"B={r0['B']} H={r0['H']} T={r0['T']}, non-causal, median of {r0['reps']} calls (attn), mean (SDPA)")
print(f"{'impl':<22}{'Dk':>5}{'ms':>10}{'TFLOP/s':>10}{'vs SDPA':>9}{'vs naive':>10}")
for r in ours:
    s = sd.get((ref_dtype.get(r["impl"]), r["Dk"]))
    vs = f"{r['tflops'] / s['tflops']:.2f}x" if s else "-"
    n = naive.get(r["Dk"])
    vn = f"{n['mean_ms'] / r['mean_ms']:.1f}x" if n else "-"
    print(f"{r['impl']:<22}{r['Dk']:>5}{r['mean_ms']:>10.3f}{r['tflops']:>10.1f}{vs:>9}{vn:>10}")
for r in sdpa:
    print(f"{r['impl']:<22}{r['Dk']:>5}{r['mean_ms']:>10.3f}{r['tflops']:>10.1f}{'1.00x':>9}{'':>10}")
# the issue's targets
checks = []
for r in ours:
    s = sd.get((ref_dtype.get(r["impl"]), r["Dk"]))
    if r["impl"].startswith("cuda-flash-") and s:
        ratio = r["tflops"] / s["tflops"]
        checks.append(f"{r['impl']} Dk={r['Dk']}: {ratio:.2f} of SDPA ({'meets' if ratio >= 0.5 else 'MISSES'} >= 0.50)")
    if r["impl"] == "cuda-flash":
        for base in ("cuda-naive",):
            n = next((x for x in ours if x["impl"] == base and x["Dk"] == r["Dk"]), None)
            if n:
                sp = n["mean_ms"] / r["mean_ms"]
                checks.append(f"cuda-flash Dk={r['Dk']}: {sp:.1f}x {base} ({'meets' if sp >= 10 else 'MISSES'} >= 10x)")
print("targets:" + ("".join("\n  " + c for c in checks) if checks else " not measured"))
PY
cat "$LOGS/table.txt"
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then cp "$LOGS"/*.log "$LOGS"/*.jsonl "$LOGS/table.txt" "$OUT/" 2>/dev/null; fi
echo "gpu-check: done in $(( $(date +%s) - T0 )) s; logs in $LOGS"
exit $PARITY
