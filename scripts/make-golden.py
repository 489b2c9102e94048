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

Two more sets, each checked against nn.MultiheadAttention itself (the module, not
the written-out math), for what `attn forward` reads from files:
  tests/fixtures/golden_masks/NAME.json   x, weights and PyTorch's weights and out for
      a mask read with --mask-file NAME.mask.npy (or NAME.mask.json): boolean or
      additive (float, added to the scaled scores), [T, T], [B, T, T] or per head
      [B, H, T, T] (nn.MultiheadAttention's attn_mask of shape (B*H, T, T))
  tests/fixtures/golden_cross/NAME.json   cross-attention: query x (B, Tq, D), key
      input x_kv (B, Tk, kdim), value input x_v (B, Tk, vdim) when vdim != kdim,
      the module built with kdim/vdim, an optional key padding mask
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


def tensor_json(a):
    a = a.detach().contiguous()
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1).tolist()]}


def module_weights(gen, D, H, kdim, vdim, bias=True):
    """nn.Linear-style U(-1/sqrt(in), 1/sqrt(in)) weights: W_q [D, D], W_k [D, kdim], W_v [D, vdim], W_o [D, D]."""
    def lin(out_f, in_f):
        bound = 1 / math.sqrt(in_f)
        W = (torch.rand(out_f, in_f, generator=gen) * 2 - 1) * bound
        b = (torch.rand(out_f, generator=gen) * 2 - 1) * bound if bias else None
        return W, b
    return lin(D, D), lin(D, kdim), lin(D, vdim), lin(D, D)


def module_with(D, H, kdim, vdim, w):
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = w
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True, kdim=kdim, vdim=vdim)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(torch.cat([Wq, Wk, Wv]))
        else:
            mha.q_proj_weight.copy_(Wq)
            mha.k_proj_weight.copy_(Wk)
            mha.v_proj_weight.copy_(Wv)
        mha.in_proj_bias.copy_(torch.cat([bq, bk, bv]))
        mha.out_proj.weight.copy_(Wo)
        mha.out_proj.bias.copy_(bo)
    return mha.eval()


# name, B, H, T, D, mask file kind, shape of the mask ("tt", "btt", "bhtt"), --mask spec beside it, file format
MASK_CASES = [
    ("bool_tt", 2, 2, 5, 8, "bool", "tt", "none", "npy"),
    ("bool_btt_json", 2, 2, 6, 8, "bool", "btt", "none", "json"),
    ("additive_btt", 2, 2, 5, 8, "float", "btt", "none", "npy"),
    ("additive_causal", 2, 2, 6, 8, "float", "tt", "causal", "npy"),
    ("perhead_bool", 2, 3, 5, 12, "bool", "bhtt", "none", "npy"),
    ("perhead_additive_f8", 2, 2, 4, 8, "float64", "bhtt", "none", "npy"),
    ("perhead_additive_json", 1, 4, 5, 8, "float", "bhtt", "none", "json"),
]


def mask_case(name, B, H, T, D, kind, shape, spec, fmt_, gen, out_dir):
    import numpy as np
    x = torch.randn(B, T, D, generator=gen)
    w = module_weights(gen, D, H, D, D)
    dims = {"tt": (T, T), "btt": (B, T, T), "bhtt": (B, H, T, T)}[shape]
    if kind == "bool":
        allowed = torch.rand(*dims, generator=gen) < 0.6
        allowed[..., 0] = True  # every row keeps a key: a row with none is NaN in PyTorch
        file_mask = allowed
    else:
        add = torch.randn(*dims, generator=gen)
        add = add.masked_fill(torch.rand(*dims, generator=gen) < 0.25, float("-inf"))
        add[..., 0] = torch.randn(add[..., 0].shape, generator=gen)  # every row keeps a finite key
        file_mask = add
    # the mask as nn.MultiheadAttention takes it: (T, T) or (B*H, T, T); bool True = masked
    full = file_mask.expand(B, H, T, T) if shape == "bhtt" else (
        file_mask[None, None].expand(B, H, T, T) if shape == "tt" else file_mask[:, None].expand(B, H, T, T))
    if kind == "bool":
        am = ~full.reshape(B * H, T, T)
    else:
        am = full.reshape(B * H, T, T).float()
        if spec == "causal":
            am = am.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    mha = module_with(D, H, D, D, w)
    with torch.no_grad():
        out, weights = mha(x, x, x, attn_mask=am, need_weights=True, average_attn_weights=False)
    assert not torch.isnan(out).any(), name
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = w
    mask_file = name + (".mask.npy" if fmt_ == "npy" else ".mask.json")
    if fmt_ == "npy":
        arr = file_mask.numpy()
        arr = arr.astype(np.float64) if kind == "float64" else arr
        np.save(os.path.join(out_dir, mask_file), arr)
    else:
        key = "mask" if kind == "bool" else "additive_mask"
        with open(os.path.join(out_dir, mask_file), "w") as f:
            json.dump({"format": "attn-dump", "version": 1, "config": {}, "seed": 0,
                       "tensors": {key: tensor_json(file_mask.float())}}, f, allow_nan=True)
    return {
        "format": "attn-dump", "version": 1,
        "config": {"batch": B, "seq": T, "d_model": D, "heads": H, "d_k": D // H, "d_v": D // H, "mask": spec,
                   "scale": "sqrt", "fill": "-inf", "bias": True, "mask_file": mask_file,
                   "generator": f"nn.MultiheadAttention of PyTorch {torch.__version__}, float32, scripts/make-golden.py"},
        "seed": 0,
        "tensors": {"x": tensor_json(x), "W_q": tensor_json(Wq), "b_q": tensor_json(bq), "W_k": tensor_json(Wk),
                    "b_k": tensor_json(bk), "W_v": tensor_json(Wv), "b_v": tensor_json(bv), "W_o": tensor_json(Wo),
                    "b_o": tensor_json(bo), "weights": tensor_json(weights), "out": tensor_json(out)},
    }


# name, B, H, Tq, Tk, D, kdim, vdim, key padding lengths (or None)
CROSS_CASES = [
    ("cross_same_dim", 2, 2, 3, 7, 8, 8, 8, None),
    ("cross_kdim_vdim", 2, 4, 5, 3, 16, 6, 10, None),
    ("cross_kdim_pad", 3, 2, 4, 6, 8, 12, 12, [6, 2, 4]),
]


def cross_case(name, B, H, Tq, Tk, D, kdim, vdim, lens, gen):
    x = torch.randn(B, Tq, D, generator=gen)
    key = torch.randn(B, Tk, kdim, generator=gen)
    value = key if vdim == kdim else torch.randn(B, Tk, vdim, generator=gen)
    w = module_weights(gen, D, H, kdim, vdim)
    mha = module_with(D, H, kdim, vdim, w)
    kpm = None
    if lens is not None:
        kpm = torch.arange(Tk)[None, :] >= torch.tensor(lens)[:, None]  # True = padding
    with torch.no_grad():
        out, weights = mha(x, key, value, key_padding_mask=kpm, need_weights=True, average_attn_weights=False)
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = w
    tensors = {"x": tensor_json(x), "x_kv": tensor_json(key)}
    if vdim != kdim:
        tensors["x_v"] = tensor_json(value)
    tensors.update({"W_q": tensor_json(Wq), "b_q": tensor_json(bq), "W_k": tensor_json(Wk), "b_k": tensor_json(bk),
                    "W_v": tensor_json(Wv), "b_v": tensor_json(bv), "W_o": tensor_json(Wo), "b_o": tensor_json(bo),
                    "weights": tensor_json(weights), "out": tensor_json(out)})
    return {
        "format": "attn-dump", "version": 1,
        "config": {"batch": B, "seq": Tq, "tk": Tk, "d_model": D, "heads": H, "d_k": D // H, "d_v": D // H,
                   "kdim": kdim, "vdim": vdim, "bias": True, "scale": "sqrt", "fill": "-inf",
                   "mask": "none" if lens is None else "pad:" + ",".join(str(v) for v in lens),
                   "generator": f"nn.MultiheadAttention(kdim, vdim) of PyTorch {torch.__version__}, float32"},
        "seed": 0, "tensors": tensors,
    }


def write_sets():
    for sub, cases, fn in (("golden_masks", MASK_CASES, mask_case), ("golden_cross", CROSS_CASES, cross_case)):
        out_dir = os.path.join(OUT, "..", sub)
        os.makedirs(out_dir, exist_ok=True)
        for i, case in enumerate(cases):
            gen = torch.Generator().manual_seed(5000 + 100 * len(sub) + i)
            d = fn(*case, gen, out_dir) if fn is mask_case else fn(*case, gen)
            path = os.path.join(out_dir, case[0] + ".json")
            with open(path, "w") as f:
                json.dump(d, f, allow_nan=True)
            print("wrote", os.path.relpath(path))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--files-only":  # only the mask-file and cross-attention sets
        torch.set_num_threads(1)
        return write_sets()
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
    write_sets()


if __name__ == "__main__":
    sys.exit(main())
