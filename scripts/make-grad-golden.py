#!/usr/bin/python3
"""Make the gradient fixtures that pin attn's backward passes to PyTorch autograd.

Each case is one self-attention multi-head attention layer, written out step by
step as scripts/make-golden.py does (F.linear, view + transpose, Q K^T * scale
(+ additive mask), masked_fill, softmax, dropout, matmul, merge, F.linear), run
forward in float32, then backward with torch.autograd for a given upstream
gradient dout (L = sum(out * dout)). The file (tests/fixtures/grad/NAME.json) is
an attn-dump: config = the options, tensors = the inputs (x, W_*, b_*, dout,
mask_allowed / mask_additive when the case has them), the forward's `out`, the
dropout decision `keep` when dropout is on, and every gradient autograd gives:
  d_out_heads (B, H, T, Dv)  dL/d head_out
  d_weights   (B, H, T, T)   dL/d softmax output (before dropout)
  d_scores    (B, H, T, T)   dL/d scaled scores (after scale + additive mask, before masked_fill)
  dQ, dK, dV  (B, H, T, d)   dL/d per-head Q, K, V (before the cosine normalisation)
  dx, dW_q, db_q, dW_k, db_k, dW_v, db_v, dW_o, db_o
tests/test_grad_golden.cpp checks attn against them.

Two places where attn defines what PyTorch leaves open, reproduced here:
- a query whose keys are all masked with fill -inf: PyTorch's softmax gives NaN;
  attn defines the weights as 0 (so every gradient through the row is 0). The
  script fills such rows with 0 before softmax and zeroes their weights after.
- dropout: attn draws its mask from a counter-based hash (lib/core/src/rng.cpp,
  counter_uniform; lib/core/src/attention.cpp, dropout_drops): weight element
  (b, h, i, j) of the (B, H, T, T) tensor is dropped iff
  counter_uniform(seed, ((b*H + h)*T + i)*T + j) < p. The same function is
  written below in Python, so torch applies the identical mask.

Run with Debian's python3 (python3-torch): /usr/bin/python3 scripts/make-grad-golden.py
The tests read the committed files; they do not need PyTorch.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "grad")

M64 = (1 << 64) - 1


def mix64(x):
    """splitmix64's finaliser, as attn::mix64."""
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def counter_uniform(seed, index):
    """attn::counter_uniform: a float in [0, 1) with 24 random bits (exact in float32)."""
    h = mix64(mix64(seed) ^ ((index * 0xD1B54A32D192ED03) & M64))
    return (h >> 40) * 2.0 ** -24


def keep_mask(seed, p, B, H, T):
    """(B, H, T, T) float32, 1 = kept: attn::dropout_drops for every flat index."""
    p32 = float(torch.tensor(p, dtype=torch.float32))  # attn compares with the float32 p
    n = B * H * T * T
    keep = [0.0 if (p32 > 0 and counter_uniform(seed, i) < p32) else 1.0 for i in range(n)]
    return torch.tensor(keep, dtype=torch.float32).view(B, H, T, T)


CASES = [
    # name, B, T, D, H, Dk, Dv, mask (CLI grammar), extra mask parts, scale, fill, bias, dropout
    ("causal_2heads", 2, 5, 8, 2, 4, 4, "causal", "", "sqrt", "-inf", True, 0.0),
    ("pad_dk_ne_dv", 2, 6, 8, 2, 3, 5, "pad:6,3", "", "sqrt", "-inf", True, 0.0),
    ("custom_dead_row_inf", 2, 4, 6, 2, 3, 3, "none", "bool", "sqrt", "-inf", True, 0.0),
    ("custom_dead_row_1e9", 2, 4, 6, 2, 3, 3, "none", "bool", "sqrt", "-1e9", True, 0.0),
    ("additive", 2, 5, 8, 2, 4, 4, "none", "additive", "sqrt", "-inf", True, 0.0),
    ("combined_causal_pad_bool_additive", 2, 5, 8, 2, 4, 2, "causal+pad:5,3", "bool+additive", "sqrt", "-inf", True, 0.0),
    ("scale_none_3heads", 1, 5, 6, 3, 2, 2, "causal", "", "none", "-inf", True, 0.0),
    ("scale_const_no_bias", 2, 4, 8, 2, 4, 4, "none", "", "0.3", "-inf", False, 0.0),
    ("cosine_tau", 2, 5, 8, 2, 4, 3, "pad:5,2", "", "cosine:0.2", "-inf", True, 0.0),
    ("dropout_causal", 2, 6, 8, 2, 4, 4, "causal", "", "sqrt", "-inf", True, 0.3),
    ("dropout_cosine_3heads", 2, 4, 6, 3, 2, 3, "none", "", "cosine", "-inf", True, 0.5),
]

DROPOUT_SEED = 1234567  # AttentionOptions::seed as given to the library


def allowed_from_spec(spec, B, T):
    """(B, T, T) bool, True = may attend; attn's --mask grammar."""
    m = torch.ones(B, T, T, dtype=torch.bool)
    for p in spec.split("+"):
        if p == "none":
            continue
        if p == "causal":
            m &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        elif p.startswith("pad:"):
            lens = [int(v) for v in p[4:].split(",")]
            m &= torch.arange(T)[None, None, :] < torch.tensor(lens)[:, None, None]
        else:
            raise ValueError(spec)
    return m


def run_case(name, B, T, D, H, Dk, Dv, mask, extra, scale, fill, bias, p, gen):
    x = torch.randn(B, T, D, generator=gen)

    def lin(out_f, in_f):
        bound = 1 / math.sqrt(in_f)
        W = (torch.rand(out_f, in_f, generator=gen) * 2 - 1) * bound
        b = (torch.rand(out_f, generator=gen) * 2 - 1) * bound if bias else None
        return W, b

    Wq, bq = lin(H * Dk, D)
    Wk, bk = lin(H * Dk, D)
    Wv, bv = lin(H * Dv, D)
    Wo, bo = lin(D, H * Dv)
    dout = torch.randn(B, T, D, generator=gen)
    allowed = allowed_from_spec(mask, B, T)
    mask_allowed = mask_additive = None
    if "bool" in extra:
        # random allowed pattern with batch row 0, query 1 seeing no key: a fully masked row
        mask_allowed = torch.rand(B, T, T, generator=gen) < 0.7
        mask_allowed[0, 1, :] = False
        allowed = allowed & mask_allowed
    additive = torch.zeros(B, T, T)
    if "additive" in extra:
        mask_additive = torch.randn(B, T, T, generator=gen)
        additive = mask_additive

    params = [x, Wq, Wk, Wv, Wo] + ([bq, bk, bv, bo] if bias else [])
    for t in params:
        t.requires_grad_(True)

    Q = F.linear(x, Wq, bq).view(B, T, H, Dk).transpose(1, 2)  # (B, H, T, Dk)
    K = F.linear(x, Wk, bk).view(B, T, H, Dk).transpose(1, 2)  # (B, H, T, Dk)
    V = F.linear(x, Wv, bv).view(B, T, H, Dv).transpose(1, 2)  # (B, H, T, Dv)
    for t in (Q, K, V):
        t.retain_grad()
    q, k = Q, K
    if scale == "sqrt":
        s = 1 / math.sqrt(Dk)
    elif scale == "none":
        s = 1.0
    elif scale.startswith("cosine"):
        tau = float(scale.split(":")[1]) if ":" in scale else 1.0
        q, k, s = F.normalize(Q, dim=-1, eps=1e-12), F.normalize(K, dim=-1, eps=1e-12), 1 / tau
    else:
        s = float(scale)
    scaled = q @ k.transpose(-2, -1) * s + additive[:, None]  # (B, H, T, T)
    scaled.retain_grad()
    allowed4 = allowed[:, None]  # (B, 1, T, T)
    masked = scaled.masked_fill(~allowed4, float(fill))
    dead = torch.zeros_like(allowed4[..., :1])  # rows attn defines as all-zero weights
    if fill == "-inf":
        dead = ~allowed4.any(dim=-1, keepdim=True)
        masked = masked.masked_fill(dead, 0.0)
    weights = torch.softmax(masked, dim=-1).masked_fill(dead, 0.0)
    weights.retain_grad()
    keep = None
    dropped = weights
    if p > 0:
        keep = keep_mask(DROPOUT_SEED, p, B, H, T)
        one = torch.tensor(1.0, dtype=torch.float32)
        dropped = weights * keep * (one / (one - torch.tensor(p, dtype=torch.float32)))
    head_out = dropped @ V  # (B, H, T, Dv)
    head_out.retain_grad()
    merged = head_out.transpose(1, 2).contiguous().view(B, T, H * Dv)
    out = F.linear(merged, Wo, bo)
    (out * dout).sum().backward()

    def t(a):
        a = a.detach().contiguous().float()
        return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1).tolist()]}

    tensors = {"x": t(x), "W_q": t(Wq), "W_k": t(Wk), "W_v": t(Wv), "W_o": t(Wo)}
    if bias:
        tensors.update({"b_q": t(bq), "b_k": t(bk), "b_v": t(bv), "b_o": t(bo)})
    tensors["dout"] = t(dout)
    if mask_allowed is not None:
        tensors["mask_allowed"] = t(mask_allowed.float())
    if mask_additive is not None:
        tensors["mask_additive"] = t(mask_additive)
    if keep is not None:
        tensors["keep"] = t(keep)
    tensors.update({"out": t(out), "d_out_heads": t(head_out.grad), "d_weights": t(weights.grad),
                    "d_scores": t(scaled.grad), "dQ": t(Q.grad), "dK": t(K.grad), "dV": t(V.grad),
                    "dx": t(x.grad), "dW_q": t(Wq.grad), "dW_k": t(Wk.grad), "dW_v": t(Wv.grad),
                    "dW_o": t(Wo.grad)})
    if bias:
        tensors.update({"db_q": t(bq.grad), "db_k": t(bk.grad), "db_v": t(bv.grad), "db_o": t(bo.grad)})
    for n_, v in tensors.items():
        assert all(math.isfinite(e) for e in v["data"]), f"{name}: {n_} is not finite"
    return {
        "format": "attn-dump", "version": 1,
        "config": {"batch": B, "seq": T, "d_model": D, "heads": H, "d_k": Dk, "d_v": Dv, "mask": mask,
                   "scale": scale, "fill": fill, "dropout": p, "train": p > 0, "bias": bias,
                   "dropout_seed": DROPOUT_SEED,
                   "generator": f"PyTorch {torch.__version__}, float32 autograd, scripts/make-grad-golden.py"},
        "seed": 0, "tensors": tensors,
    }


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for i, case in enumerate(CASES):
        gen = torch.Generator().manual_seed(2000 + i)
        d = run_case(*case, gen)
        path = os.path.join(OUT, case[0] + ".json")
        with open(path, "w") as f:
            json.dump(d, f)
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    sys.exit(main())
