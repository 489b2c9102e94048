#!/usr/bin/python3
"""scripts/bench_torch.py: PyTorch's CPU attention on the sizes `attn bench` uses,
and the ratio of attn's flash kernels to it.

PyTorch 1.13 (Debian's python3-torch, hence /usr/bin/python3) has no
scaled_dot_product_attention, so two PyTorch baselines are timed:
  matmul   softmax(Q K^T * scale [+ causal -inf]) V, three ops on (B, H, T, T)
  mha      nn.MultiheadAttention(B, T, H*Dk) forward, no grad; it also runs the
           four projections, so its GFLOP/s (attention FLOPs only) understate it
Both with torch.set_num_threads(--threads), median of --reps runs after one
warm-up, FLOPs = 4 B H T^2 Dk (half with --causal), as in `attn bench`.

attn's numbers come from `build/attn bench --json` run here with the same sizes
and threads (or from --attn-json FILE, the output of an earlier run).

  /usr/bin/python3 scripts/bench_torch.py --seq 1024,2048 --threads 2
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time


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


def median_time(fn, reps):
    """(median wall seconds, median process CPU seconds of all threads) of reps runs."""
    fn()  # warm-up
    times, cpus = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=positive, default=1)
    ap.add_argument("--heads", type=positive, default=8)
    ap.add_argument("--seq", type=positive_list, default=[1024, 2048])
    ap.add_argument("--d-k", type=positive, default=64)
    ap.add_argument("--threads", type=positive, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=positive, default=5)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--attn", default=os.path.join(os.path.dirname(__file__), "..", "build", "attn"),
                    help="the attn binary (default build/attn)")
    ap.add_argument("--attn-json", help="use this `attn bench --json` output instead of running attn")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("bench_torch.py: error: no torch module; run it with Debian's /usr/bin/python3 (python3-torch)")

    # ---- attn first (it measures the machine's peak in the same run)
    if a.attn_json:
        with open(a.attn_json) as f:
            attn = json.load(f)
    else:
        cmd = [a.attn, "bench", "--batch", str(a.batch), "--heads", str(a.heads),
               "--seq", ",".join(map(str, a.seq)), "--d-k", str(a.d_k), "--threads", str(a.threads),
               "--reps", str(a.reps), "--impl", "flash,flash-bf16", "--json"] + (["--causal"] if a.causal else [])
        print("running:", " ".join(cmd), file=sys.stderr)
        attn = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
    if attn.get("format") != "attn-bench" or attn.get("version") != 1:
        sys.exit("bench_torch.py: error: --attn-json: not an attn-bench version 1 document")
    attn_gf = {(r["impl"], r["seq"]): r["gflops"] for r in attn["results"]}
    attn_cpu = {(r["impl"], r["seq"]): r["flops"] / r["cpu_seconds"] / 1e9 for r in attn["results"]}

    # ---- PyTorch, same sizes and threads
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    B, H, Dk = a.batch, a.heads, a.d_k
    D = H * Dk
    rows = []
    with torch.no_grad():
        for T in a.seq:
            flops = 4.0 * B * H * T * T * Dk / (2 if a.causal else 1)
            q, k, v = (torch.randn(B, H, T, Dk) for _ in range(3))
            scale = 1.0 / math.sqrt(Dk)
            causal_mask = torch.ones(T, T, dtype=torch.bool).triu(1) if a.causal else None

            def matmul_attn():
                s = torch.matmul(q, k.transpose(-2, -1)) * scale  # (B, H, T, T)
                if causal_mask is not None:
                    s.masked_fill_(causal_mask, float("-inf"))
                return torch.matmul(torch.softmax(s, dim=-1), v)  # (B, H, T, Dk)

            mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
            x = torch.randn(B, T, D)

            def mha_attn():
                return mha(x, x, x, need_weights=False, attn_mask=causal_mask)[0]

            t_mm, c_mm = median_time(matmul_attn, a.reps)
            t_mha, c_mha = median_time(mha_attn, a.reps)
            row = {"seq": T, "torch_matmul_gflops": flops / t_mm / 1e9, "torch_matmul_seconds": t_mm,
                   "torch_mha_gflops": flops / t_mha / 1e9, "torch_mha_seconds": t_mha,
                   "torch_matmul_gflops_per_cpu_second": flops / c_mm / 1e9,
                   "torch_mha_gflops_per_cpu_second": flops / c_mha / 1e9}
            for impl in ("flash", "flash-bf16"):
                if (impl, T) in attn_gf:
                    row[impl + "_gflops"] = attn_gf[(impl, T)]
                    row[impl + "_over_torch_matmul"] = attn_gf[(impl, T)] / row["torch_matmul_gflops"]
                    row[impl + "_over_torch_mha"] = attn_gf[(impl, T)] / row["torch_mha_gflops"]
                    # Per CPU-second of all threads: what each would do with the cores to itself.
                    row[impl + "_over_torch_matmul_cpu"] = (attn_cpu[(impl, T)] /
                                                            row["torch_matmul_gflops_per_cpu_second"])
            rows.append(row)
            del q, k, v, x

    if a.json:
        print(json.dumps({"format": "attn-bench-torch", "version": 1, "torch": torch.__version__,
                          "threads": a.threads, "batch": B, "heads": H, "d_k": Dk, "causal": a.causal,
                          "machine": attn["machine"], "results": rows}, indent=2))
        return
    m = attn["machine"]
    print(f"torch {torch.__version__}, {a.threads} threads; B={B} H={H} Dk={Dk}{' causal' if a.causal else ''}; "
          f"FMA peak {m['fma_peak_gflops']:.1f} GFLOP/s (measured by attn bench in its run)")
    print(f"{'T':>6} {'torch mm':>9} {'torch mha':>9} {'flash':>8} {'bf16':>8} {'flash/mm':>9} {'flash/mha':>9} "
          f"{'bf16/mm':>8} {'flash/mm per CPU-s':>19}")
    for r in rows:
        def g(key, fmt="{:.1f}"):
            return fmt.format(r[key]) if key in r else "-"
        print(f"{r['seq']:>6} {g('torch_matmul_gflops'):>9} {g('torch_mha_gflops'):>9} {g('flash_gflops'):>8} "
              f"{g('flash-bf16_gflops'):>8} {g('flash_over_torch_matmul', '{:.1f}x'):>9} "
              f"{g('flash_over_torch_mha', '{:.1f}x'):>9} {g('flash-bf16_over_torch_matmul', '{:.1f}x'):>8} "
              f"{g('flash_over_torch_matmul_cpu', '{:.1f}x'):>19}")
    print("GFLOP/s (wall) count attention only (4 B H T^2 Dk); torch mha also runs its 4 projections.\n"
          "per CPU-s: GFLOP per CPU-second of all threads, a ratio that holds when the cores are shared.")


if __name__ == "__main__":
    main()
