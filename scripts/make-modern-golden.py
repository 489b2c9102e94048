#!/usr/bin/python3
"""Make the fixtures that pin attn's grouped-query attention, RoPE, ALiBi and logit
softcap to a current PyTorch (tests/fixtures/modern/NAME.json, read by
tests/test_modern_golden.cpp).

Each fixture is one call of scaled dot-product attention, written as an attn-dump
JSON file: config = the sizes and options (heads, kv_heads, seq_q, seq_k, d_k, d_v,
mask, rope, alibi, softcap, query_offset), tensors = the float32 inputs q, k, v and
PyTorch's result out (float32, computed in float64 from those inputs, so the
fixture is the exact answer rounded once):

  GQA / MQA  F.scaled_dot_product_attention(q, k, v, attn_mask, enable_gqa=True)
             (PyTorch >= 2.5), k and v with H_kv heads
  RoPE       written here in torch, rotate-half as HF's apply_rotary_pos_emb:
             inv_freq = base^(-arange(0, d, 2)/d), emb = cat(freqs, freqs),
             x*cos + rotate_half(x)*sin; queries at query_offset + i, keys at j
  ALiBi      the paper's get_slopes, bias -m_h |pos_i - j| as a float attn_mask
             (boolean masks folded in as -inf)
  softcap    by hand (SDPA has no softcap): s = q k^T scale, c tanh(s / c), + bias,
             softmax, @ v; the same hand-written path is checked against SDPA on
             every fixture without a softcap

PyTorch 1.13 (Debian's python3-torch) has no enable_gqa, so the script runs itself
under a virtual environment with torch from PyPI (default ~/.cache/attn/venv-torch,
the one scripts/bench_train_torch.py makes; --venv DIR), creating it when missing.

  python3 scripts/make-modern-golden.py
"""
import argparse
import json
import math
import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "modern")

# name, B, H, H_kv, Tq, Tk, Dk, Dv, mask, rope base (None: off), alibi, softcap (0: off), query offset, input std
CASES = [
    ("gqa_h8_kv2_causal", 2, 8, 2, 10, 10, 16, 16, "causal", None, False, 0.0, 0, 1.0),
    ("mqa_h4_kv1_pad", 2, 4, 1, 9, 9, 8, 12, "pad:9,5", None, False, 0.0, 0, 1.0),
    ("rope_llama_causal", 1, 4, 4, 12, 12, 16, 16, "causal", 10000.0, False, 0.0, 0, 1.0),
    ("rope_base500_gqa", 2, 6, 2, 7, 7, 8, 8, "none", 500.0, False, 0.0, 0, 1.0),
    ("rope_query_offset", 1, 2, 1, 3, 11, 16, 8, "none", 10000.0, False, 0.0, 8, 1.0),
    ("alibi_h8_causal", 1, 8, 8, 12, 12, 8, 8, "causal", None, True, 0.0, 0, 1.0),
    ("alibi_h6_bidirectional_gqa", 2, 6, 3, 9, 9, 8, 4, "none", None, True, 0.0, 0, 1.0),
    ("alibi_query_offset", 1, 3, 3, 2, 9, 8, 8, "none", None, True, 0.0, 7, 1.0),
    ("softcap_causal", 2, 4, 4, 10, 10, 16, 16, "causal", None, False, 2.0, 0, 3.0),
    ("all_options_gqa", 2, 6, 2, 11, 11, 16, 8, "causal+pad:11,6", 10000.0, True, 5.0, 0, 2.0),
]


def ensure_torch(venv):
    """Re-runs this script under a venv whose torch has enable_gqa, creating it if needed."""
    try:
        import torch
        if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 5):
            return
    except ImportError:
        pass
    py = os.path.join(venv, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(venv):
        sys.exit(f"make-modern-golden: error: {venv} has no torch >= 2.5; remove it and run again")
    if not os.path.exists(py):
        print(f"make-modern-golden: creating {venv} and installing torch from PyPI (a few GB, once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    probe = "import torch,sys; sys.exit(0 if tuple(int(p) for p in torch.__version__.split('.')[:2]) >= (2, 5) else 1)"
    if subprocess.run([py, "-c", probe], capture_output=True).returncode != 0:
        subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "--upgrade", "torch"],
                       check=True)
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def get_slopes(n):
    """ALiBi's slopes, as the paper's reference code computes them."""
    def power_of_2(m):
        start = 2 ** (-2 ** -(math.log2(m) - 3))
        return [start * start ** i for i in range(m)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + get_slopes(2 * closest)[0::2][:n - closest]


def allowed_mask(torch, spec, B, Tq, Tk):
    """(B, Tq, Tk) bool, True = may attend; attn's --mask grammar (causal: j <= i)."""
    m = torch.ones(B, Tq, Tk, dtype=torch.bool)
    for p in spec.split("+"):
        if p == "none":
            continue
        if p == "causal":
            m &= torch.arange(Tk)[None, None, :] <= torch.arange(Tq)[None, :, None]
        elif p.startswith("pad:"):
            lens = torch.tensor([int(v) for v in p[4:].split(",")])
            m &= torch.arange(Tk)[None, None, :] < lens[:, None, None]
        else:
            raise ValueError(spec)
    return m


def rope(torch, x, base, pos0):
    """Rotate-half RoPE of x (B, H, T, d) at positions pos0 .. pos0 + T - 1 (HF apply_rotary_pos_emb)."""
    d, T = x.shape[-1], x.shape[-2]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64) + pos0, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


def run_case(torch, F, case, gen):
    name, B, H, Hkv, Tq, Tk, Dk, Dv, mask, base, alibi, cap, offset, std = case
    q = torch.randn(B, H, Tq, Dk, generator=gen) * std
    k = torch.randn(B, Hkv, Tk, Dk, generator=gen) * std
    v = torch.randn(B, Hkv, Tk, Dv, generator=gen)
    qd, kd, vd = q.double(), k.double(), v.double()
    if base is not None:
        qd, kd = rope(torch, qd, base, offset), rope(torch, kd, base, 0)
    # the float mask: -inf where not allowed, ALiBi's -m_h |pos_i - j| elsewhere
    allowed = allowed_mask(torch, mask, B, Tq, Tk)[:, None]                      # (B, 1, Tq, Tk)
    bias = torch.zeros(B, H, Tq, Tk, dtype=torch.float64)
    if alibi:
        m = torch.tensor(get_slopes(H), dtype=torch.float64)[None, :, None, None]
        dist = (torch.arange(Tq, dtype=torch.float64)[:, None] + offset - torch.arange(Tk, dtype=torch.float64)[None, :]).abs()
        bias = bias - m * dist
    bias = bias.masked_fill(~allowed, float("-inf"))
    scale = 1 / math.sqrt(Dk)
    # by hand: the only way with a softcap
    g = H // Hkv
    kr, vr = kd.repeat_interleave(g, dim=1), vd.repeat_interleave(g, dim=1)
    s = qd @ kr.transpose(-2, -1) * scale
    if cap > 0:
        s = cap * torch.tanh(s / cap)
    w = torch.softmax(s + bias, dim=-1)
    out = w @ vr
    if cap == 0:
        sdpa = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=bias, enable_gqa=True)
        err = (sdpa - out).abs().max().item()
        assert err < 1e-12, f"{name}: SDPA(enable_gqa=True) differs from the hand-written path by {err}"

    def t(a):
        a = a.detach().float().contiguous()
        return {"shape": list(a.shape), "data": [float(x) for x in a.reshape(-1).tolist()]}
    return {
        "format": "attn-dump", "version": 1,
        "config": {"batch": B, "heads": H, "kv_heads": Hkv, "seq_q": Tq, "seq_k": Tk, "d_k": Dk, "d_v": Dv,
                   "mask": mask, "scale": "sqrt", "rope": base if base is not None else False, "alibi": alibi,
                   "softcap": cap, "query_offset": offset,
                   "generator": f"PyTorch {torch.__version__}, float64 from float32 inputs, "
                                "scripts/make-modern-golden.py"},
        "seed": 0, "tensors": {"q": t(q), "k": t(k), "v": t(v), "out": t(out)},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--venv", default=os.path.join(os.path.expanduser("~"), ".cache", "attn", "venv-torch"))
    args = p.parse_args()
    ensure_torch(args.venv)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for i, case in enumerate(CASES):
        gen = torch.Generator().manual_seed(2000 + i)
        d = run_case(torch, F, case, gen)
        path = os.path.join(OUT, case[0] + ".json")
        with open(path, "w") as f:
            json.dump(d, f)
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    sys.exit(main())
