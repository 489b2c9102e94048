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

With --encoder it compares the MiniLM encoder instead (data/models/all-MiniLM-L6-v2):
`attn model bench --json` (encoder forward + mean pooling + L2 normalisation, the
token ids it encoded) against transformers' BertModel (attn_implementation="sdpa",
no pooler) plus the same pooling on those ids, padded and masked the same way, under
torch.inference_mode, batch sizes --batches (default 1,32) and each --threads; the
same timing rule (median of --reps after --warmup). Before any timing it checks the
numbers: attn's `model embed` on the same sentences against torch's pooled
embeddings; a max |difference| above 1e-5 (unit vectors; float32 reordering over
six layers gives ~1e-7, a real defect 1e-2 or more) stops the script without a
speed table. transformers is installed into the venv (pip, PyPI) when missing.
--rounds R alternates attn and torch R times and reports the median ratio and its
range (the machines here are shared; the load average is printed). attn skips the
padded positions in its projections and feed-forward (`--padding skip`, what `attn
model embed` does: padded rows feed nothing that is kept); BertModel computes them.
--padding compute makes attn compute them too, for the like-for-like kernel ratio.
--weights bf16 runs both sides in bfloat16: attn's `--weights bf16` (bf16 projections,
float32 elsewhere) against BertModel loaded in torch.bfloat16 (every weight and
activation), both checked against torch's float32 embeddings within 1e-2.

  python3 scripts/bench_torch.py --quick           # T = 1024, 4096; 1 and 2 threads
  python3 scripts/bench_torch.py --json > out.json
  python3 scripts/bench_torch.py --encoder         # MiniLM, batch 1 and 32, 1 and 2 threads
  python3 scripts/bench_torch.py --backward --quick   # float32 backward, the tiled kernel against SDPA's
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from torch_isa import avx2_binary_note, force_isa

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


def ensure_transformers(allow_install):
    """Imports transformers, installing it into the venv (pip, PyPI) when missing."""
    try:
        import transformers  # noqa: F401
        return
    except ImportError:
        pass
    if not allow_install:
        sys.exit("bench_torch.py: error: --encoder needs transformers in the torch venv (--no-install forbids installing it)")
    print(f"installing transformers into {sys.prefix} (once)...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "transformers"], check=True)


# The encoder check: attn's and torch's sentence embeddings (unit vectors) may differ by float32
# reordering only; 1e-5 is ~100x what six layers of it give here, and far below a real defect.
ENCODER_TOLERANCE = 1e-5
# With --weights bf16, both sides' embeddings are checked against torch's float32 ones: rounding
# inputs and weights to bf16 (8 significant bits) moves unit vectors by ~1e-3 (attn measured
# 9.8e-4 on MiniLM); 1e-2 still catches a real defect (wrong weights give O(0.1)).
ENCODER_TOLERANCE_BF16 = 1e-2


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
            try:
                secs, cpu = median_time(lambda: F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal), a.reps)
            except RuntimeError as e:
                # e.g. torch 2.15 at ATEN_CPU_CAPABILITY=avx2 on a CPU with AMX: "pack_vnni2 is only
                # supported when avx512 is supported" for bf16; the cell is reported, not the run lost
                out[name] = out[name + "_cpu"] = None
                out[name + "_error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                print(f"bench_torch.py: torch's SDPA failed ({name}, T={T}): {out[name + '_error']}", file=sys.stderr)
                continue
            fl = flops_of(a.batch, a.heads, T, a.d_k, causal)
            out[name] = fl / secs / 1e9
            out[name + "_cpu"] = fl / cpu / 1e9 if cpu > 0 else None
    return out


def run_encoder(a, torch):
    """The encoder rows: attn model bench vs transformers' BertModel (sdpa), per threads x batch."""
    ensure_transformers(not a.no_install)
    import transformers
    from transformers import BertModel
    F = torch.nn.functional
    torch.manual_seed(0)
    model = BertModel.from_pretrained(a.model, attn_implementation="sdpa", add_pooling_layer=False).eval()
    reference = model  # float32: what both sides' embeddings are checked against
    if a.weights == "bf16":  # the like-for-like bf16 run: every weight and activation of BertModel in bfloat16
        model = BertModel.from_pretrained(a.model, attn_implementation="sdpa", add_pooling_layer=False,
                                          torch_dtype=torch.bfloat16).eval()
    tolerance = ENCODER_TOLERANCE if a.weights == "fp32" else ENCODER_TOLERANCE_BF16

    def attn_bench(threads):
        cmd = [a.attn, "model", "bench", "--json", "--model", a.model, "--batch", ",".join(map(str, a.batches)),
               "--threads", str(threads), "--reps", str(a.reps), "--warmup", str(a.warmup), "--padding", a.padding,
               "--weights", a.weights]
        if a.text_file:
            cmd += ["--text-file", a.text_file]
        print("running:", " ".join(cmd), file=sys.stderr)
        doc = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
        if doc.get("format") != "attn-model-bench" or doc.get("version") != 1:
            sys.exit("bench_torch.py: error: --attn: its model bench output is not an attn-model-bench version 1 document")
        return doc

    def batch_of(ids_list):
        T = max(len(s) for s in ids_list)
        ids = torch.tensor([s + [0] * (T - len(s)) for s in ids_list])
        mask = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in ids_list])
        return ids, mask

    def encode(ids, mask, net=None):
        h = (net or model)(input_ids=ids, attention_mask=mask).last_hidden_state.float()
        m = mask.unsqueeze(-1).to(h.dtype)
        return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)

    def torch_time(ids, mask):
        with torch.inference_mode():
            for _ in range(a.warmup):
                encode(ids, mask)
            times, cpus = [], []
            for _ in range(a.reps):
                c0, t0 = time.process_time(), time.perf_counter()
                encode(ids, mask)
                times.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
        return 1000 * statistics.median(times), statistics.median(cpus)

    # ---- the numbers first: attn model embed on the largest batch's sentences vs torch on the same ids
    torch.set_num_threads(a.threads[0])
    first = attn_bench(a.threads[0])
    big = max(first["runs"], key=lambda r: r["batch"])
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(big["texts"]) + "\n")
        lines = f.name
    try:
        cmd = [a.attn, "model", "embed", "--model", a.model, "--file", lines, "--batch", str(big["batch"]),
               "--truncate", "--weights", a.weights, "--json", "-"]
        emb = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout)
    finally:
        os.unlink(lines)
    got = torch.tensor([s["embedding"] for s in emb["sentences"]])
    if [s["tokens"] for s in emb["sentences"]] != [len(s) for s in big["ids"]]:
        sys.exit("bench_torch.py: error: attn model embed and attn model bench tokenised the sentences differently")
    ids, mask = batch_of(big["ids"])
    with torch.inference_mode():
        want = encode(ids, mask, reference)
        torch_diff = (encode(ids, mask) - want).abs().max().item()
    diff = (got - want).abs().max().item()
    print(f"check: max |attn ({a.weights}) - torch (float32)| of the sentence embeddings, batch {big['batch']} "
          f"(T={ids.shape[1]}): {diff:.2e} (tolerance {tolerance:g}); torch ({a.weights}) - torch (float32): "
          f"{torch_diff:.2e}", file=sys.stderr)
    if not diff <= tolerance:
        sys.exit(f"bench_torch.py: error: attn and torch disagree (max |difference| {diff:.3e} > {tolerance:g}); "
                 "no speed reported")

    # ---- the timings: for each thread count, rounds of (attn bench, torch on the same ids)
    rows = []
    for threads in a.threads:
        torch.set_num_threads(threads)
        per = {}
        for r in range(a.rounds):
            doc = first if (r == 0 and threads == a.threads[0]) else attn_bench(threads)
            for run in doc["runs"]:
                ids, mask = batch_of(run["ids"])
                tms, tcpu = torch_time(ids, mask)
                p = per.setdefault(run["batch"], {"T": run["tokens_padded"], "real": run["tokens_real"],
                                                  "attn_ms": [], "torch_ms": [], "ratio": [], "ratio_cpu": [],
                                                  "path": doc["attention_path"], "kernel": doc["attention_kernel"],
                                                  "gemm": doc["gemm_path"], "padding": doc.get("padding", "compute")})
                p["attn_ms"].append(run["median_ms"])
                p["torch_ms"].append(tms)
                p["ratio"].append(tms / run["median_ms"])
                if run.get("cpu_seconds", 0) > 0 and tcpu > 0:
                    p["ratio_cpu"].append(tcpu / run["cpu_seconds"])
        for B, p in per.items():
            rows.append({"threads": threads, "batch": B, "tokens_padded": p["T"], "tokens_real": p["real"],
                         "attention_path": p["path"], "attention_kernel": p["kernel"], "gemm_path": p["gemm"],
                         "padding": p["padding"],
                         "attn_ms": statistics.median(p["attn_ms"]), "torch_ms": statistics.median(p["torch_ms"]),
                         "attn_sentences_per_s": 1000 * B / statistics.median(p["attn_ms"]),
                         "torch_sentences_per_s": 1000 * B / statistics.median(p["torch_ms"]),
                         "ratio": statistics.median(p["ratio"]), "ratio_min": min(p["ratio"]),
                         "ratio_max": max(p["ratio"]),
                         "ratio_cpu": statistics.median(p["ratio_cpu"]) if p["ratio_cpu"] else None})
    return {"rows": rows, "check_max_abs_diff": diff, "tolerance": tolerance, "machine": first["machine"],
            "transformers": transformers.__version__, "weights": a.weights, "torch_vs_fp32_max_abs_diff": torch_diff}


def print_encoder(a, torch, enc, load_before, load_after):
    m = enc["machine"]
    print(f"processor: {m.get('cpu_model') or '?'} [{' '.join(m.get('cpu_flags', []))}]")
    print(f"attn: attention {enc['rows'][0]['attention_path']} ({enc['rows'][0]['attention_kernel']}), GEMM "
          f"{enc['rows'][0]['gemm_path']}, padded positions "
          f"{'skipped' if enc['rows'][0]['padding'] == 'skip' else 'computed'}; torch "
          f"{torch.__version__} (cpu capability {torch.backends.cpu.get_cpu_capability()}), transformers "
          f"{enc['transformers']} BertModel, sdpa")
    print(f"MiniLM-L6 encoder + mean pooling, {enc['weights']} weights on both sides; median of {a.reps} after "
          f"{a.warmup} warm-up, {a.rounds} round(s); load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
          f"after; attn's embeddings within {enc['check_max_abs_diff']:.1e} of torch's float32 ones (tolerance "
          f"{enc['tolerance']:g}; torch's own {enc['weights']}: {enc['torch_vs_fp32_max_abs_diff']:.1e})")
    print()
    print("| threads | batch | T (real/padded) | attn ms | torch ms | attn sent/s | torch sent/s | ratio | range | per CPU-s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in enc["rows"]:
        cpu = "-" if r["ratio_cpu"] is None else f"{r['ratio_cpu']:.2f}x"
        print(f"| {r['threads']} | {r['batch']} | {r['tokens_real']}/{r['batch'] * r['tokens_padded']} | "
              f"{r['attn_ms']:.2f} | {r['torch_ms']:.2f} | {r['attn_sentences_per_s']:.0f} | "
              f"{r['torch_sentences_per_s']:.0f} | {r['ratio']:.2f}x | {r['ratio_min']:.2f}-{r['ratio_max']:.2f} | {cpu} |")
    print("\nratio = torch time / attn time (> 1: attn faster), median over rounds; range: lowest and highest round;\n"
          "per CPU-s: the same ratio per CPU-second of each process's threads.")


def run_attn_backward(a, threads, causal):
    cmd = [a.attn, "bench", "--backward", "--batch", str(a.batch), "--heads", str(a.heads), "--seq",
           ",".join(map(str, a.seq)), "--d-k", str(a.d_k), "--threads", str(threads), "--reps", str(a.reps),
           "--impl", "flash", "--json", "--yes"] + (["--causal"] if causal else [])
    print("running:", " ".join(cmd), file=sys.stderr)
    doc = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
    if doc.get("format") != "attn-bench" or doc.get("version") != 1 or not doc.get("config", {}).get("backward"):
        sys.exit("bench_torch.py: error: --attn: its bench --backward output is not an attn-bench version 1 document")
    return doc


def run_torch_backward(torch, a, threads, causal, T):
    """SDPA's backward alone, float32: the graph of one forward, then autograd.grad(out, (q, k, v), dO)
    repeated (retain_graph), which runs its CPU flash backward from the saved output and log-sum-exp."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    F = torch.nn.functional
    q, k, v = (torch.randn(a.batch, a.heads, T, a.d_k, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    dout = torch.randn_like(out)
    secs, cpu = median_time(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), a.reps)
    fl = 2.5 * flops_of(a.batch, a.heads, T, a.d_k, causal)  # attn bench's convention (FlashAttention's)
    return fl / secs / 1e9, (fl / cpu / 1e9 if cpu > 0 else None)


def backward_table(a, torch):
    machine, rows = None, []
    for threads in a.threads:
        for causal in (False, True):
            doc = run_attn_backward(a, threads, causal)
            machine = machine or doc["machine"]
            res = {r["seq"]: r for r in doc["results"] if r["impl"] == "flash"}
            for T in a.seq:
                r = res.get(T)
                tw, tc = run_torch_backward(torch, a, threads, causal, T)
                rows.append({"threads": threads, "causal": causal, "seq": T, "torch_fp32": tw, "torch_fp32_cpu": tc,
                             "attn_fp32": r["gflops"] if r else None,
                             "attn_fp32_cpu": r["flops"] / r["cpu_seconds"] / 1e9
                             if r and r.get("cpu_seconds", 0) > 0 else None,
                             "fma_peak_gflops": doc["machine"].get("fma_peak_gflops"),
                             "attn_peak_fraction": r["gflops"] / doc["machine"]["fma_peak_gflops"]
                             if r and doc["machine"].get("fma_peak_gflops") else None})
    return machine, rows


def attention_json(fmt, version, a, torch, load_before, load_after, machine, rows):
    """The JSON document of the attention tables (forward and backward share its fields)."""
    return json.dumps({"format": fmt, "version": version, "torch": torch.__version__,
                       "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                       "batch": a.batch, "heads": a.heads, "d_k": a.d_k, "reps": a.reps,
                       "load_before": load_before, "load_after": load_after, "machine": machine,
                       "results": rows}, indent=2)


def print_attention_header(machine, torch, attn_desc, run_desc, load_before, load_after):
    """The lines above an attention table: processor, kernels, sizes and load."""
    print(f"processor: {machine.get('cpu_model') or '?'} [{' '.join(machine.get('cpu_flags', []))}]")
    print(f"attn: {attn_desc}; torch {torch.__version__} (cpu capability {torch.backends.cpu.get_cpu_capability()})")
    print(f"{run_desc}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print()


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
    ap.add_argument("--isa", choices=["generic", "avx2", "avx512", "amx"],
                    help="force both sides to one kernel family: ATTN_ISA for attn, ATEN_CPU_CAPABILITY for torch "
                         "(generic -> default; amx -> avx512), so a wider CPU measures a narrower one's figures "
                         "(avx2: time a build of the avx2 preset, --attn build-avx2/attn)")
    ap.add_argument("--backward", action="store_true",
                    help="compare the float32 backward (attn bench --backward, the tiled kernel) with SDPA's instead")
    ap.add_argument("--encoder", action="store_true",
                    help="compare the MiniLM encoder (attn model bench) with transformers' BertModel instead")
    ap.add_argument("--batches", type=positive_list, default=[1, 32], help="--encoder: batch sizes (default 1,32)")
    ap.add_argument("--warmup", type=positive, default=2, help="--encoder: untimed runs first (default 2)")
    ap.add_argument("--padding", choices=["skip", "compute"], default="skip",
                    help="--encoder: attn skips the padded positions (as model embed; default) or computes them as "
                         "BertModel does")
    ap.add_argument("--weights", choices=["fp32", "bf16"], default="fp32",
                    help="--encoder: float32, or bf16 on both sides (attn --weights bf16; BertModel in bfloat16)")
    ap.add_argument("--rounds", type=positive, default=3, help="--encoder: attn/torch rounds (default 3)")
    ap.add_argument("--text-file", help="--encoder: sentences, one per line (default: attn's 8 built-in ones)")
    ap.add_argument("--model", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models",
                                                    "all-MiniLM-L6-v2"), help="--encoder: the model folder")
    a = ap.parse_args()
    force_isa(a.isa)
    if a.quick:
        a.seq = [t for t in a.seq if t < 16384]
        if not a.seq:
            ap.error("--quick: every --seq length is >= 16384")
    if not os.access(a.attn, os.X_OK):
        ap.error(f"--attn: {a.attn} is not an executable (build attn first)")
    if a.encoder and not os.path.isfile(os.path.join(a.model, "model.safetensors")):
        ap.error(f"--model: {a.model} has no model.safetensors (run scripts/fetch-model.sh)")
    if a.text_file and not os.path.isfile(a.text_file):
        ap.error(f"--text-file: {a.text_file} is not a file")
    ensure_torch(not a.no_install)
    avx2_binary_note(a.isa, a.attn)  # after ensure_torch, which may run this script again in the venv
    import torch

    load_before = load_average()
    if a.encoder:
        enc = run_encoder(a, torch)
        load_after = load_average()
        if a.json:
            print(json.dumps({"format": "attn-bench-torch-encoder", "version": 1, "torch": torch.__version__,
                              "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                              "transformers": enc["transformers"], "reps": a.reps, "warmup": a.warmup,
                              "rounds": a.rounds, "load_before": load_before, "load_after": load_after,
                              "machine": enc["machine"], "check_max_abs_diff": enc["check_max_abs_diff"],
                              "tolerance": enc["tolerance"], "results": enc["rows"]}, indent=2))
        else:
            print_encoder(a, torch, enc, load_before, load_after)
        return
    if a.backward:
        machine, rows = backward_table(a, torch)
        load_after = load_average()
        if a.json:
            print(attention_json("attn-bench-torch-backward", 1, a, torch, load_before, load_after, machine, rows))
            return
        print_attention_header(machine, torch, f"tiled backward, float32 kernel {machine['flash_kernel']}",
                               f"B={a.batch} H={a.heads} Dk={a.d_k}; backward alone; median of {a.reps} after 1 warm-up",
                               load_before, load_after)
        print("| threads | mask | T | attn bwd | of FMA peak | SDPA bwd | ratio | per CPU-s |")
        print("|---|---|---|---|---|---|---|---|")
        for row in rows:
            at, to = row["attn_fp32"], row["torch_fp32"]
            pk = "-" if row["attn_peak_fraction"] is None else f"{100 * row['attn_peak_fraction']:.0f}%"
            ac, tc = row["attn_fp32_cpu"], row["torch_fp32_cpu"]
            print(f"| {row['threads']} | {'causal' if row['causal'] else 'none'} | {row['seq']} | "
                  f"{'-' if at is None else f'{at:.0f}'} | {pk} | "
                  f"{to:.0f} | {'-' if at is None else f'{at / to:.2f}x'} | "
                  f"{'-' if ac is None or tc is None else f'{ac / tc:.2f}x'} |")
        print("\nGFLOP/s of wall time, FLOPs = 2.5 x the forward's (FlashAttention's count; causal: the allowed "
              "pairs); of FMA peak: attn's rate against the FMA peak attn bench measured at that thread count; "
              "ratio = attn / SDPA.")
        return
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
                       "attn_fp32_cpu": attn_cpu.get(("flash", T)), "attn_bf16_cpu": attn_cpu.get(("flash-bf16", T)),
                       "torch_errors": {k[:-len("_error")]: v for k, v in tor.items() if k.endswith("_error")}}
                rows.append(row)
    load_after = load_average()

    if a.json:
        print(attention_json("attn-bench-torch", 2, a, torch, load_before, load_after, machine, rows))
        return

    print_attention_header(machine, torch,
                           f"float32 kernel {machine['flash_kernel']}, bf16 path {machine.get('flash_bf16_path', '?')}",
                           f"B={a.batch} H={a.heads} Dk={a.d_k}; median of {a.reps} after 1 warm-up",
                           load_before, load_after)
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
    errors = sorted({f"{dt}: {msg}" for row in rows for dt, msg in row["torch_errors"].items()})
    if errors:
        print("\n- : torch's SDPA failed there (" + "; ".join(errors) + ")")
    print("\nGFLOP/s of wall time; ratio = attn / SDPA. per CPU-s: the same ratio per CPU-second of all the "
          "process's threads,\nsteadier when the cores are shared (PyTorch's OpenMP threads may also count "
          "time spent waiting).")


if __name__ == "__main__":
    main()
