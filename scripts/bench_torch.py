#!/usr/bin/python3
"""scripts/bench_torch.py: attn's flash kernels against PyTorch 2's
torch.nn.functional.scaled_dot_product_attention on the CPU, one table from one run.

For every thread count (--threads, default 1,2), mask (none, causal) and T (--seq,
default 1024,4096,16384; --quick drops 16384): attn's `flash` (float32) and
`flash-bf16` rows from `attn bench --json`, and SDPA on float32 and bfloat16
tensors of the same shape (B, H, T, Dk), timed here the same way: median of
--reps runs after one warm-up, FLOPs = 4 B H T^2 Dk (causal: 2 B H T(T+1) Dk, as
attn bench counts), so each ratio is a ratio of times. The header names the
processor, its vector/tile flags, attn's dispatch (the float32 kernel and the bf16
path, e.g. amx) and the load average before and after: the figures belong to that
machine only.

torch is not a build dependency. The script runs itself under the virtual
environment ~/.cache/attn/venv-torch (override: ATTN_TORCH_VENV), creating it once
with `pip install torch` from PyPI when it does not exist yet (--no-install:
fail instead).

  python3 scripts/bench_torch.py --quick           # T = 1024, 4096; 1 and 2 threads
  python3 scripts/bench_torch.py --json > out.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VENV = os.environ.get("ATTN_TORCH_VENV", os.path.expanduser("~/.cache/attn/venv-torch"))


def positive_list(text):
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers, got '{text}'")
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers, got '{text}'")
    return vals


def positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    return v


def ensure_torch(allow_install):
    """Import a torch with SDPA (2.0 or later) here, or re-run this script under the venv
    (created once if allowed). Debian's python3-torch is 1.13: no SDPA, so the venv."""
    try:
        import torch
        if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            return
    except ImportError:
        pass
    py = os.path.join(VENV, "bin", "python")
    if os.environ.get("ATTN_BENCH_TORCH_REEXEC") == "1":
        sys.exit(f"bench_torch.py: error: {py} has no torch >= 2 (scaled_dot_product_attention); remove {VENV} to recreate it")
    if not os.path.exists(py):
        if not allow_install:
            sys.exit(f"bench_torch.py: error: no torch here and no virtual environment {VENV} (--no-install)")
        print(f"creating {VENV} with torch from PyPI (once)...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", "torch", "numpy"], check=True)
    env = dict(os.environ, ATTN_BENCH_TORCH_REEXEC="1")
    os.execve(py, [py] + sys.argv, env)


def load_average():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def flops_of(B, H, T, Dk, causal):
    pairs = T * (T + 1) / 2 if causal else T * T
    return 4.0 * B * H * pairs * Dk


def median_time(fn, reps):
    """(median wall seconds, median CPU seconds of the process, all threads) of reps runs."""
    fn()  # warm-up
    times, cpus = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpus)


def run_attn(a, threads, causal):
    cmd = [a.attn, "bench", "--batch", str(a.batch), "--heads", str(a.heads), "--seq", ",".join(map(str, a.seq)),
           "--d-k", str(a.d_k), "--threads", str(threads), "--reps", str(a.reps), "--impl", "flash,flash-bf16",
           "--json", "--yes"] + (["--causal"] if causal else [])
    print("running:", " ".join(cmd), file=sys.stderr)
    doc = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
    if doc.get("format") != "attn-bench" or doc.get("version") != 1:
        sys.exit("bench_torch.py: error: --attn: its bench output is not an attn-bench version 1 document")
    return doc


def run_torch(torch, a, threads, causal, T):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    F = torch.nn.functional
    out = {}
    with torch.no_grad():
        q, k, v = (torch.randn(a.batch, a.heads, T, a.d_k) for _ in range(3))
        for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            qq, kk, vv = q.to(dtype), k.to(dtype), v.to(dtype)
            secs, cpu = median_time(lambda: F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal), a.reps)
            fl = flops_of(a.batch, a.heads, T, a.d_k, causal)
            out[name] = fl / secs / 1e9
            out[name + "_cpu"] = fl / cpu / 1e9 if cpu > 0 else None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=positive, default=1)
    ap.add_argument("--heads", type=positive, default=8)
    ap.add_argument("--seq", type=positive_list, default=[1024, 4096, 16384])
    ap.add_argument("--quick", action="store_true", help="drop T >= 16384 (minutes each on 2 cores)")
    ap.add_argument("--d-k", type=positive, default=64)
    ap.add_argument("--threads", type=positive_list, default=[1, 2], help="thread counts (default 1,2)")
    ap.add_argument("--reps", type=positive, default=3)
    ap.add_argument("--attn", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "attn"),
                    help="the attn binary (default build/attn)")
    ap.add_argument("--no-install", action="store_true", help="never create the torch virtual environment")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    a = ap.parse_args()
    if a.quick:
        a.seq = [t for t in a.seq if t < 16384]
        if not a.seq:
            ap.error("--quick: every --seq length is >= 16384")
    if not os.access(a.attn, os.X_OK):
        ap.error(f"--attn: {a.attn} is not an executable (build attn first)")
    ensure_torch(not a.no_install)
    import torch

    load_before = load_average()
    machine = None
    rows = []
    for threads in a.threads:
        for causal in (False, True):
            doc = run_attn(a, threads, causal)
            machine = machine or doc["machine"]
            attn = {(r["impl"], r["seq"]): r["gflops"] for r in doc["results"]}
            attn_cpu = {(r["impl"], r["seq"]): r["flops"] / r["cpu_seconds"] / 1e9 for r in doc["results"]
                        if r.get("cpu_seconds", 0) > 0}
            for T in a.seq:
                tor = run_torch(torch, a, threads, causal, T)
                row = {"threads": threads, "causal": causal, "seq": T, "torch_fp32": tor["fp32"],
                       "torch_bf16": tor["bf16"], "attn_fp32": attn.get(("flash", T)),
                       "attn_bf16": attn.get(("flash-bf16", T)), "flash_bf16_path": doc["machine"].get("flash_bf16_path"),
                       "torch_fp32_cpu": tor["fp32_cpu"], "torch_bf16_cpu": tor["bf16_cpu"],
                       "attn_fp32_cpu": attn_cpu.get(("flash", T)), "attn_bf16_cpu": attn_cpu.get(("flash-bf16", T))}
                rows.append(row)
    load_after = load_average()

    if a.json:
        print(json.dumps({"format": "attn-bench-torch", "version": 2, "torch": torch.__version__,
                          "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                          "batch": a.batch, "heads": a.heads, "d_k": a.d_k, "reps": a.reps,
                          "load_before": load_before, "load_after": load_after, "machine": machine,
                          "results": rows}, indent=2))
        return

    m = machine
    print(f"processor: {m.get('cpu_model') or '?'} [{' '.join(m.get('cpu_flags', []))}]")
    print(f"attn: float32 kernel {m['flash_kernel']}, bf16 path {m.get('flash_bf16_path', '?')}; "
          f"torch {torch.__version__} (cpu capability {torch.backends.cpu.get_cpu_capability()})")
    print(f"B={a.batch} H={a.heads} Dk={a.d_k}; median of {a.reps} after 1 warm-up; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print()
    print("| threads | mask | T | attn fp32 | SDPA fp32 | ratio | per CPU-s | attn bf16 | SDPA bf16 | ratio | per CPU-s "
          "| attn bf16/fp32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f(x):
        return "-" if x is None else f"{x:.0f}"

    def r(x, y):
        return "-" if x is None or y is None else f"{x / y:.2f}x"

    for row in rows:
        print(f"| {row['threads']} | {'causal' if row['causal'] else 'none'} | {row['seq']} | "
              f"{f(row['attn_fp32'])} | {f(row['torch_fp32'])} | {r(row['attn_fp32'], row['torch_fp32'])} | "
              f"{r(row['attn_fp32_cpu'], row['torch_fp32_cpu'])} | "
              f"{f(row['attn_bf16'])} | {f(row['torch_bf16'])} | {r(row['attn_bf16'], row['torch_bf16'])} | "
              f"{r(row['attn_bf16_cpu'], row['torch_bf16_cpu'])} | {r(row['attn_bf16'], row['attn_fp32'])} |")
    print("\nGFLOP/s of wall time; ratio = attn / SDPA. per CPU-s: the same ratio per CPU-second of all the "
          "process's threads,\nsteadier when the cores are shared (PyTorch's OpenMP threads may also count "
          "time spent waiting).")


if __name__ == "__main__":
    main()
