#!/usr/bin/env python3
"""scripts/bench_train_torch.py: training steps per second of attn's tiny Transformer
against the same model, batch and optimiser in PyTorch, on the same threads.

The model (both sides): tokens -> embedding + learned positions -> N pre-LayerNorm
blocks (x + MHA(LN1(x)), x + W2 GELU_tanh(W1 LN2(x))) -> LN_f -> head (V, D, no bias),
cross-entropy over the scored positions (ignore_index=-1), gradient clipping at norm 1,
AdamW (lr 1e-3, weight decay 0.01 on matrices and embeddings). The task is attn's
associative recall (keys, values, a query key; the answer at one [MASK] position,
encoder layout: no causal mask), defaults as issue 11 sets them: 2 layers, d_model 64,
4 heads, T 64, batch 64, 2 threads.

PyTorch: a current torch from PyPI, installed by this script into its own virtual
environment (default ~/.cache/attn/venv-torch; --venv DIR), not a dependency of the
build. Attention uses F.scaled_dot_product_attention, PyTorch's fastest CPU path.
A step is batch generation + forward + backward + clipping + AdamW; the median of
--rounds timed rounds of --steps steps each, after --warmup untimed steps.

attn: `attn train --task recall ... --eval-every 0 --json -` run here with the same
sizes; its steps/s counts training steps only (evaluation excluded), batches included.

  python3 scripts/bench_train_torch.py                 # install torch if needed, then both
  python3 scripts/bench_train_torch.py --attn build/attn --steps 200 --threads 2
  python3 scripts/bench_train_torch.py --cpu-time    # CPU-seconds per step (a loaded machine)

--cpu-time counts CPU time instead of wall time, for a machine shared with other work, where
wall-clock rates mostly measure the other work: torch's timed rounds by time.process_time
(every thread of the process; OMP_WAIT_POLICY=PASSIVE is set so idle OpenMP threads sleep
instead of spinning), attn's whole `attn train` run by the child's rusage (user + system),
divided by its steps (start-up and warmup included, so attn's figure is slightly pessimistic).
Both are reported as CPU-milliseconds per step; on dedicated cores the wall time of a step is
at least its CPU time divided by the threads. With --json the steps_per_s fields are then steps
per CPU-second.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from torch_isa import avx2_binary_note, force_isa

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    return v


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=positive, default=2)
    p.add_argument("--d-model", type=positive, default=64)
    p.add_argument("--heads", type=positive, default=4)
    p.add_argument("--seq", type=positive, default=64, help="T")
    p.add_argument("--batch", type=positive, default=64, help="B")
    p.add_argument("--symbols", type=positive, default=16)
    p.add_argument("--threads", type=positive, default=2)
    p.add_argument("--steps", type=positive, default=100, help="steps per timed round")
    p.add_argument("--rounds", type=positive, default=3)
    p.add_argument("--warmup", type=positive, default=10)
    p.add_argument("--attn", default=None, help="the attn binary (default: build/attn, else attn on PATH)")
    p.add_argument("--venv", default=os.path.join(os.path.expanduser("~"), ".cache", "attn", "venv-torch"))
    p.add_argument("--torch-only", action="store_true", help="time PyTorch only")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--isa", choices=["generic", "avx2", "avx512", "amx"],
                    help="force both sides to one kernel family: ATTN_ISA for attn, ATEN_CPU_CAPABILITY for torch "
                         "(generic -> default; amx -> avx512), so a wider CPU measures a narrower one's figures "
                         "(avx2: time a build of the avx2 preset, --attn build-avx2/attn)")
    p.add_argument("--cpu-time", action="store_true", help="count CPU time instead of wall time (a shared machine)")
    return p.parse_args()


def ensure_torch(args):
    """Re-runs this script under a venv that has torch, creating it if needed."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    py = os.path.join(args.venv, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(args.venv):
        sys.exit(f"bench_train_torch: error: torch is not importable in {args.venv}; remove it and run again")
    if not os.path.exists(py):
        print(f"bench_train_torch: creating {args.venv} and installing torch from PyPI (a few GB, once)",
              file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", args.venv], check=True)
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "torch", "numpy"], check=True)
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def recall_batch(torch, gen, B, T, S):
    """attn's recall task, encoder layout: k1 v1 .. kp vp q [MASK] [PAD]..; target at [MASK]."""
    p = (T - 2) // 2
    K = max(S, p)
    keys = torch.argsort(torch.rand(B, K, generator=gen), dim=1)[:, :p]          # p distinct keys per row
    values = K + torch.randint(0, S, (B, p), generator=gen)
    tokens = torch.full((B, T), K + S + 1, dtype=torch.long)                       # PAD
    tokens[:, 0:2 * p:2] = keys
    tokens[:, 1:2 * p:2] = values
    q = torch.randint(0, p, (B,), generator=gen)
    rows = torch.arange(B)
    tokens[:, 2 * p] = keys[rows, q]
    tokens[:, 2 * p + 1] = K + S                                                   # MASK
    targets = torch.full((B, T), -1, dtype=torch.long)
    targets[:, 2 * p + 1] = values[rows, q]
    return tokens, targets, K + S + 2


def time_torch(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    B, T, D, H = args.batch, args.seq, args.d_model, args.heads
    _, _, V = recall_batch(torch, gen, 1, T, args.symbols)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(D, D) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            h = self.ln1(x)                                                       # (B, T, D)
            split = lambda t: t.view(B, T, H, D // H).transpose(1, 2)             # (B, H, T, Dk)
            a = F.scaled_dot_product_attention(split(self.q_proj(h)), split(self.k_proj(h)), split(self.v_proj(h)))
            x = x + self.o_proj(a.transpose(1, 2).reshape(B, T, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb, self.pos_emb = nn.Embedding(V, D), nn.Embedding(T, D)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)

        def forward(self, tokens):
            x = self.tok_emb(tokens) + self.pos_emb.weight[:T]
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))                                        # (B, T, V)

    model = Model()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3)

    def step():
        tokens, targets, _ = recall_batch(torch, gen, B, T, args.symbols)
        loss = F.cross_entropy(model(tokens).view(B * T, V), targets.view(B * T), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    clock = time.process_time if args.cpu_time else time.perf_counter
    rates = []
    for _ in range(args.rounds):
        t0 = clock()
        for _ in range(args.steps):
            step()
        rates.append(args.steps / (clock() - t0))
    return {"steps_per_s": statistics.median(rates), "rounds": rates, "version": torch.__version__,
            "threads": torch.get_num_threads(), "parameters": sum(p.numel() for p in model.parameters())}


def time_attn(args):
    exe = args.attn
    if exe is None:
        exe = os.path.join(ROOT, "build", "attn")
        if not os.path.exists(exe):
            exe = shutil.which("attn") or exe
    if not os.path.exists(exe):
        sys.exit(f"bench_train_torch: error: no attn binary at {exe} (build it, or give --attn PATH)")
    avx2_binary_note(args.isa, exe)
    cmd = [exe, "train", "--task", "recall", "--arch", "encoder", "--layers", str(args.layers), "--d-model",
           str(args.d_model), "--heads", str(args.heads), "--seq", str(args.seq), "--batch", str(args.batch),
           "--symbols", str(args.symbols), "--threads", str(args.threads), "--lr", "1e-3", "--clip", "1",
           "--steps", str(args.warmup + args.steps * args.rounds), "--eval-every", "0", "--eval-batches", "1",
           "--quiet", "--json", "-"]
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    j = json.loads(out)
    res = {"steps_per_s": j["result"]["steps_per_s"], "parameters": j["model"]["parameters"], "command": " ".join(cmd)}
    if args.cpu_time:  # every step of the run, warmup included, over the child's CPU time
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        res["steps_per_s"] = (args.warmup + args.steps * args.rounds) / cpu
    return res


def main():
    args = parse_args()
    force_isa(args.isa)
    if args.cpu_time:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch starts OpenMP
    ensure_torch(args)
    t = time_torch(args)
    res = {"config": {k: getattr(args, k) for k in ("layers", "d_model", "heads", "seq", "batch", "threads", "cpu_time")},
           "torch": t}
    if not args.torch_only:
        a = time_attn(args)
        res["attn"] = a
        res["ratio"] = a["steps_per_s"] / t["steps_per_s"]
    if args.json:
        print(json.dumps(res, indent=2))
        return
    c = res["config"]
    if args.cpu_time:
        ms = lambda r: 1000.0 / r
        print(f"recall, {c['layers']} layers, d_model {c['d_model']}, {c['heads']} heads, T {c['seq']}, batch {c['batch']}, "
              f"AdamW, {c['threads']} threads; CPU-milliseconds per step (all threads)")
        print(f"  torch {t['version']:<12} {ms(t['steps_per_s']):8.1f} CPU-ms/step  (rounds "
              + ", ".join(f"{ms(r):.1f}" for r in t["rounds"]) + ")")
        if "attn" in res:
            print(f"  attn               {ms(res['attn']['steps_per_s']):8.1f} CPU-ms/step")
            print(f"  torch / attn CPU time per step: {res['ratio']:.2f}x")
        return
    print(f"recall, {c['layers']} layers, d_model {c['d_model']}, {c['heads']} heads, T {c['seq']}, batch {c['batch']}, "
          f"AdamW, {c['threads']} threads")
    print(f"  torch {t['version']:<12} {t['steps_per_s']:8.1f} steps/s  ({t['parameters']} parameters; rounds "
          + ", ".join(f"{r:.1f}" for r in t["rounds"]) + ")")
    if "attn" in res:
        print(f"  attn               {res['attn']['steps_per_s']:8.1f} steps/s  ({res['attn']['parameters']} parameters)")
        print(f"  attn / torch: {res['ratio']:.2f}x")


if __name__ == "__main__":
    main()
