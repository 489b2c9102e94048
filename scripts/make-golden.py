#!/usr/bin/python3
"""Make the golden fixtures that pin attn's multi-head attention to PyTorch.

Each case is written as an attn-dump JSON file (tests/fixtures/golden/NAME.json):
config = the attn forward options, tensors = the inputs (x, W_*, b_*) and PyTorch's
float32 results (Q, K, V per head, weights, head_out, out). The math is
nn.MultiheadAttention's with batch_first=True, written out step by step
(F.linear, view + transpose, Q K^T * scale, masked_fill, softmax, matmul) so that
Dk != Dv and the non-default scales can be covered; where the configuration is
one nn.MultiheadAttention supports (Dk = Dv = D/H, default scale, -inf fill) the
script also checks the module itself agrees.

Run with Debian's python3 (python3-torch): /usr/bin/python3 scripts/make-golden.py
The tests read the committed files; they do not need PyTorch.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "golden")

CASES = [
    # name, B, T, D, H, Dk, Dv, mask, scale, fill, bias
    ("source_example", 2, 6, 16, 1, 16, 16, "none", "sqrt", "-inf", True),
    ("causal_3heads", 2, 5, 12, 3, 4, 4, "causal", "sqrt", "-inf", True),
    ("pad_dk_ne_dv", 3, 7, 16, 4, 6, 10, "pad:7,3,5", "sqrt", "-inf", True),
    ("causal_pad_fill_1e9", 2, 6, 8, 2, 4, 4, "causal+pad:6,4", "sqrt", "-1e9", True),
    ("fully_masked_row_1e9", 2, 4, 8, 2, 4, 4, "pad:0,3", "sqrt", "-1e9", True),
    ("scale_const_no_bias", 2, 6, 16, 2, 8, 8, "none", "0.1", "-inf", False),
    ("scale_none", 1, 5, 8, 1, 8, 8, "causal", "none", "-inf", True),
    ("cosine_tau", 2, 6, 16, 4, 4, 8, "pad:6,2", "cosine:0.1", "-inf", True),
    ("wide_8heads", 2, 16, 64, 8, 8, 8, "causal", "sqrt", "-inf", True),
]


def allowed_mask(spec, B, T):
    """(B, T, T) bool, True = may attend; same grammar as attn's --mask."""
    m = torch.ones(B, T, T, dtype=torch.bool)
    parts = spec.split("+")
    for p in parts:
        if p == "none":
            continue
        if p == "causal":
            m &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        elif p.startswith("pad:"):
            lens = [int(v) for v in p[4:].split(",")]
            keys = torch.arange(T)[None, None, :] < torch.tensor(lens)[:, None, None]  # (B, 1, T) key padding
            m &= keys
        else:
            raise ValueError(spec)
    return m


def run_case(name, B, T, D, H, Dk, Dv, mask, scale, fill, bias, gen):
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

    Q = F.linear(x, Wq, bq).view(B, T, H, Dk).transpose(1, 2)  # (B, H, T, Dk)
    K = F.linear(x, Wk, bk).view(B, T, H, Dk).transpose(1, 2)  # (B, H, T, Dk)
    V = F.linear(x, Wv, bv).view(B, T, H, Dv).transpose(1, 2)  # (B, H, T, Dv)
    q, k = Q, K
    if scale == "sqrt":
        s = 1 / math.sqrt(Dk)
    elif scale == "none":
        s = 1.0
    elif scale.startswith("cosine"):
        tau = float(scale.split(":")[1]) if ":" in scale else 1.0
        q, k, s = F.normalize(Q, dim=-1), F.normalize(K, dim=-1), 1 / tau
    else:
        s = float(scale)
    scores = q @ k.transpose(-2, -1) * s  # (B, H, T, T)
    allowed = allowed_mask(mask, B, T)[:, None]  # (B, 1, T, T)
    fill_v = float("-inf") if fill == "-inf" else float(fill)
    masked = scores.masked_fill(~allowed, fill_v)
    weights = torch.softmax(masked, dim=-1)
    head_out = weights @ V  # (B, H, T, Dv)
    merged = head_out.transpose(1, 2).contiguous().view(B, T, H * Dv)
    out = F.linear(merged, Wo, bo)

    if Dk == Dv == D // H and D % H == 0 and scale == "sqrt" and fill == "-inf" and bias:
        # Cross-check the hand-written math against nn.MultiheadAttention itself.
        mha = torch.nn.MultiheadAttention(D, H, batch_first=True)
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([Wq, Wk, Wv]))
            mha.in_proj_bias.copy_(torch.cat([bq, bk, bv]))
            mha.out_proj.weight.copy_(Wo)
            mha.out_proj.bias.copy_(bo)
        am = ~allowed_mask(mask, B, T).repeat_interleave(H, dim=0)  # True = masked, (B*H, T, T)
        ref, _ = mha(x, x, x, attn_mask=am, need_weights=False)
        err = (ref - out).abs().max().item()
        assert err < 1e-5, f"{name}: nn.MultiheadAttention differs by {err}"

    def t(a):
        a = a.detach().contiguous()
        return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1).tolist()]}
    tensors = {"x": t(x), "W_q": t(Wq), "W_k": t(Wk), "W_v": t(Wv), "W_o": t(Wo)}
    if bias:
        tensors.update({"b_q": t(bq), "b_k": t(bk), "b_v": t(bv), "b_o": t(bo)})
    tensors.update({"Q": t(Q), "K": t(K), "V": t(V), "weights": t(weights), "head_out": t(head_out),
                    "merged": t(merged), "out": t(out)})
    return {
        "format": "attn-dump", "version": 1,
        "config": {"batch": B, "seq": T, "d_model": D, "heads": H, "d_k": Dk, "d_v": Dv, "mask": mask,
                   "scale": scale, "fill": fill, "dropout": 0.0, "train": False, "bias": bias,
                   "generator": f"PyTorch {torch.__version__}, float32, scripts/make-golden.py"},
        "seed": 0, "tensors": tensors,
    }


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for i, case in enumerate(CASES):
        gen = torch.Generator().manual_seed(1000 + i)
        d = run_case(*case, gen)
        path = os.path.join(OUT, case[0] + ".json")
        with open(path, "w") as f:
            json.dump(d, f, allow_nan=True)  # -inf never appears in these tensors; NaN neither
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    sys.exit(main())
