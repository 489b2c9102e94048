#!/usr/bin/env python3
"""scripts/bench-model-torch.py: attn's C++ encoder vs PyTorch on the same weights, ids and threads.

Runs `build/attn model bench --json` (which reports its own median latencies and
the exact token ids it encoded), then times PyTorch on those ids: the
all-MiniLM-L6-v2 encoder forward, mean pooling over real tokens and L2
normalisation, under torch.inference_mode with torch.set_num_threads(THREADS).
The PyTorch model is transformers' BertModel when transformers is importable,
else a plain-torch BERT written below from the same safetensors (--impl).
Prints the medians and the ratio torch / attn (> 1: attn is faster). On a
shared machine the load drifts: --rounds alternates attn and torch runs and
reports, per side, the median of the per-round medians and the best run.
Debian's python3-torch links the reference BLAS (very slow); point
LD_LIBRARY_PATH at an OpenBLAS libblas.so.3 for a fair comparison (the report
says which BLAS the process loaded).

Usage: /usr/bin/python3 scripts/bench-model-torch.py [--threads 1] [--batch 1,32]
           [--repeat 30] [--impl auto|hf|plain] [--attn build/attn] [--json]
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_safetensors(path):
    # The format: u64 header length, JSON header, raw little-endian data.
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, v in header.items():
        if name == "__metadata__" or v["dtype"] != "F32":
            continue
        b, e = v["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(raw, dtype=np.float32, count=(e - b) // 4, offset=base + b)
                                     .reshape(v["shape"]).copy())
    return out


class PlainBert:
    """BERT encoder in plain torch ops (the same maths as attn's bert.cpp)."""

    def __init__(self, folder):
        cfg = json.load(open(os.path.join(folder, "config.json")))
        self.w = load_safetensors(os.path.join(folder, "model.safetensors"))
        self.L, self.H, self.eps = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["layer_norm_eps"]

    def __call__(self, ids, mask):
        w, B, T = self.w, ids.shape[0], ids.shape[1]
        D = w["embeddings.word_embeddings.weight"].shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = F.layer_norm(x, (D,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        add = torch.zeros(B, 1, 1, T).masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        Dk = D // self.H
        for l in range(self.L):
            p = f"encoder.layer.{l}."
            def lin(name, t):
                return F.linear(t, w[p + name + ".weight"], w[p + name + ".bias"])
            q, k, v = (lin(f"attention.self.{n}", x).view(B, T, self.H, Dk).transpose(1, 2)
                       for n in ("query", "key", "value"))
            s = q @ k.transpose(-1, -2) / Dk ** 0.5 + add
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
            x = F.layer_norm(x + lin("attention.output.dense", a), (D,), w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = F.gelu(lin("intermediate.dense", x))
            x = F.layer_norm(x + lin("output.dense", h), (D,), w[p + "output.LayerNorm.weight"],
                             w[p + "output.LayerNorm.bias"], self.eps)
        return x


def loaded_blas():
    # the BLAS library this process actually mapped (torch links libblas.so.3)
    try:
        libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if ".so" in line})
    except OSError:
        return "?"
    for key in ("libopenblas", "libmkl", "libblis", "libblas"):
        for lib in libs:
            if key in os.path.basename(lib):
                return lib
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--impl", choices=["auto", "hf", "plain"], default="auto")
    ap.add_argument("--attn", default=os.path.join(ROOT, "build/attn"))
    ap.add_argument("--model", default=os.path.join(ROOT, "data/models/all-MiniLM-L6-v2"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    def attn_round():
        # attn's own timing, and the ids it used
        cmd = [a.attn, "model", "bench", "--json", "--threads", str(a.threads), "--batch", a.batch,
               "--repeat", str(a.repeat), "--model", a.model]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} failed: {res.stderr.strip()}")
        return json.loads(res.stdout)

    torch.set_num_threads(a.threads)
    impl = a.impl
    if impl in ("auto", "hf"):
        try:
            from transformers import BertModel
            hf = BertModel.from_pretrained(a.model).eval()
            impl = "hf"
        except Exception as e:  # transformers missing or too new for torch 1.13
            if a.impl == "hf":
                sys.exit(f"bench: transformers unavailable: {e}")
            impl = "plain"
    if impl == "plain":
        plain = PlainBert(a.model)

    def encode(ids, mask):
        if impl == "hf":
            h = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        else:
            h = plain(ids, mask)
        m = mask.unsqueeze(-1).float()
        return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)

    def torch_round(run):
        # PyTorch on the ids attn used, padded and masked the same way
        ids_list = run["ids"]
        T = max(len(s) for s in ids_list)
        ids = torch.tensor([s + [0] * (T - len(s)) for s in ids_list])
        mask = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in ids_list])
        with torch.inference_mode():
            for _ in range(2):
                encode(ids, mask)
            ms = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                encode(ids, mask)
                ms.append(1000 * (time.perf_counter() - t0))
        return statistics.median(ms), min(ms), T

    per = {}  # batch -> lists
    for _ in range(a.rounds):
        ours = attn_round()
        for run in ours["runs"]:
            tmed, tmin, T = torch_round(run)
            p = per.setdefault(run["batch"], {"T": T, "attn": [], "attn_min": [], "torch": [], "torch_min": []})
            p["attn"].append(run["median_ms"])
            p["attn_min"].append(run["min_ms"])
            p["torch"].append(tmed)
            p["torch_min"].append(tmin)
    rows = []
    for B, p in per.items():
        am, tm = statistics.median(p["attn"]), statistics.median(p["torch"])
        rows.append({"batch": B, "tokens_padded": p["T"], "attn_ms": am, "torch_ms": tm, "torch_over_attn": tm / am,
                     "attn_best_ms": min(p["attn_min"]), "torch_best_ms": min(p["torch_min"]),
                     "best_torch_over_attn": min(p["torch_min"]) / min(p["attn_min"])})
    report = {"threads": a.threads, "repeat": a.repeat, "rounds": a.rounds, "torch": torch.__version__,
              "torch_impl": impl, "blas": loaded_blas(), "runs": rows}
    if a.json:
        print(json.dumps(report))
        return
    print(f"encoder + mean pooling, {a.threads} thread(s), {a.rounds} rounds x {a.repeat} runs; "
          f"torch {torch.__version__} ({impl}), BLAS {report['blas']}")
    print(f"{'batch':>6} {'T':>4} {'attn ms':>9} {'torch ms':>9} {'torch/attn':>10}   "
          f"{'best attn':>9} {'best torch':>10} {'ratio':>6}")
    for r in rows:
        print(f"{r['batch']:>6} {r['tokens_padded']:>4} {r['attn_ms']:>9.2f} {r['torch_ms']:>9.2f} "
              f"{r['torch_over_attn']:>10.2f}   {r['attn_best_ms']:>9.2f} {r['torch_best_ms']:>10.2f} "
              f"{r['best_torch_over_attn']:>6.2f}")


if __name__ == "__main__":
    main()
