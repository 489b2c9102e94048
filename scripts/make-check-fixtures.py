#!/usr/bin/env python3
"""scripts/make-check-fixtures.py: the learner files `attn check` is tested on.

An attention implementation in numpy, written independently of attn's C++, run once
correctly (float32 and float64) and once per mistake of attn check's catalogue with that
one mistake made, plus one mistake the catalogue does not know. Each run is saved as
tests/fixtures/check/NAME.npz holding the inputs (x, W_*, b_*), every intermediate the
learner computed (Q, K, V, scores, scores_scaled, scores_masked, weights, head_out,
merged, out) and the settings in __attn__ (as `attn exercise` writes them). The files are
committed: the tests need no Python. Run again with

    python3 scripts/make-check-fixtures.py

(numpy comes from a virtual environment in /tmp/venv-numpy, made the first time, when the
running python lacks it.)
"""
import json
import os
import subprocess
import sys


def ensure_numpy():
    try:
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    venv = "/tmp/venv-numpy"
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "--progress-bar", "off", "numpy"])
    os.execv(py, [py] + sys.argv)


ensure_numpy()
import numpy as np  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "check")


def softmax(s, axis=-1, stable=True):
    with np.errstate(all="ignore"):
        if stable:
            s = s - s.max(axis=axis, keepdims=True)
        e = np.exp(s)
        return e / e.sum(axis=axis, keepdims=True)


def attention(inp, cfg, bug=None, dtype=np.float32):
    """Multi-head attention, one mistake `bug` made (None: none). Returns every stage."""
    x = inp["x"].astype(dtype)
    W = {k: inp[k].astype(dtype) for k in inp if k.startswith("W_")}
    b = {k: inp[k].astype(dtype) for k in inp if k.startswith("b_")}
    B, T, D = x.shape
    H, Hkv = cfg["heads"], cfg.get("kv_heads", cfg["heads"])

    def lin(a, w, bias):
        y = a @ w if bug == "weight-not-transposed" else a @ w.T
        return y if bug == "missing-bias" else y + bias

    def split(y, h):
        d = y.shape[-1] // h
        if bug == "split-no-transpose":
            return y.reshape(B, h, T, d)
        return y.reshape(B, T, h, d).transpose(0, 2, 1, 3)

    st = {}
    st["Q"] = split(lin(x, W["W_q"], b["b_q"]), H)
    st["K"] = split(lin(x, W["W_k"], b["b_k"]), Hkv)
    st["V"] = split(lin(x, W["W_v"], b["b_v"]), Hkv)
    K, V = st["K"], st["V"]
    if Hkv != H:
        g = H // Hkv
        if bug == "kv-repeat-order":
            K, V = np.tile(K, (1, g, 1, 1)), np.tile(V, (1, g, 1, 1))
        else:
            K, V = np.repeat(K, g, axis=1), np.repeat(V, g, axis=1)
    Q = st["Q"]
    Dk = Q.shape[-1]
    st["scores"] = K @ Q.transpose(0, 1, 3, 2) if bug == "scores-transposed" else Q @ K.transpose(0, 1, 3, 2)
    scale = {"no-scale": 1.0, "scale-by-dk": 1.0 / Dk, "scale-by-dmodel": 1.0 / np.sqrt(D),
             "temperature-twice": 0.5 / np.sqrt(Dk)}.get(bug, 1.0 / np.sqrt(Dk))
    st["scores_scaled"] = (st["scores"] * dtype(scale)).astype(dtype)
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    keep = np.ones((B, T, T), dtype=bool)
    if cfg["mask"].startswith("causal"):
        keep &= (j < i) if bug == "causal-off-by-one" else (j <= i)
    if "pad:" in cfg["mask"]:
        lens = [int(v) for v in cfg["mask"].split("pad:")[1].split(",")]
        for bb, L in enumerate(lens):
            if bug == "mask-on-queries":
                keep[bb] &= np.arange(T)[:, None] < L
            else:
                keep[bb] &= np.arange(T)[None, :] < L
    if bug == "mask-inverted":
        keep = ~keep
    keep = keep[:, None, :, :]
    s = st["scores_scaled"]
    if bug in ("mask-after-softmax", "mask-missing"):
        st["scores_masked"] = s.copy()
    elif bug == "mask-zero-fill":
        st["scores_masked"] = np.where(keep, s, dtype(0))
    else:
        st["scores_masked"] = np.where(keep, s, dtype(-np.inf))
    m = st["scores_masked"]
    if bug == "no-softmax":
        w = m
    elif bug == "softmax-query-axis":
        w = softmax(m, axis=-2)
    else:
        w = softmax(m, stable=bug != "unstable-softmax")
    if bug == "mask-after-softmax":
        w = np.where(keep, w, dtype(0))
    st["weights"] = w.astype(dtype)
    with np.errstate(all="ignore"):
        st["head_out"] = st["weights"] @ V
    ho = st["head_out"]
    if bug == "merge-no-transpose":
        st["merged"] = ho.reshape(B, T, -1)
    else:
        st["merged"] = ho.transpose(0, 2, 1, 3).reshape(B, T, -1)
    if bug == "no-output-projection":
        st["out"] = st["merged"]
    else:
        with np.errstate(all="ignore"):
            st["out"] = lin(st["merged"], W["W_o"], b["b_o"])
    return {k: np.ascontiguousarray(v.astype(dtype)) for k, v in st.items()}


def inputs(rng, B, T, D, H, Hkv, Dk, x_scale=1.0):
    r = 1.0 / np.sqrt(D)
    u = lambda *s: rng.uniform(-r, r, size=s).astype(np.float32)  # noqa: E731
    return {"x": (rng.standard_normal((B, T, D)) * x_scale).astype(np.float32),
            "W_q": u(H * Dk, D), "b_q": u(H * Dk), "W_k": u(Hkv * Dk, D), "b_k": u(Hkv * Dk),
            "W_v": u(Hkv * Dk, D), "b_v": u(Hkv * Dk), "W_o": u(D, H * Dk), "b_o": u(D)}


def save(name, inp, st, cfg):
    meta = {"format": "attn-dump", "version": 1, "config": cfg}
    arrays = dict(inp)
    arrays.update(st)
    arrays["__attn__"] = np.array(json.dumps(meta).encode())
    np.savez(os.path.join(OUT, name + ".npz"), **arrays)


def main():
    os.makedirs(OUT, exist_ok=True)
    # T = 6, Dk = 8, H = 2, D = 16: sizes that differ, so each mistake leaves its own fingerprint
    mha = {"heads": 2, "mask": "causal", "scale": "sqrt"}
    pad = {"heads": 2, "mask": "pad:4,6", "scale": "sqrt"}
    gqa = {"heads": 4, "kv_heads": 2, "mask": "causal", "scale": "sqrt"}
    rng = np.random.default_rng(49)
    a = inputs(rng, 1, 6, 16, 2, 2, 8)
    p = inputs(rng, 2, 6, 16, 2, 2, 8)
    g = inputs(rng, 1, 6, 16, 4, 2, 4)
    big = inputs(rng, 1, 6, 16, 2, 2, 8, x_scale=40.0)
    save("correct-f32", a, attention(a, mha), mha)
    save("correct-f64", a, attention(a, mha, dtype=np.float64), mha)
    save("correct-pad", p, attention(p, pad), pad)
    save("correct-gqa", g, attention(g, gqa), gqa)
    save("correct-large", big, attention(big, mha), mha)
    for bug in ["no-scale", "scale-by-dk", "scale-by-dmodel", "softmax-query-axis", "no-softmax",
                "mask-after-softmax", "mask-zero-fill", "mask-missing", "causal-off-by-one", "mask-inverted",
                "scores-transposed", "split-no-transpose", "merge-no-transpose", "weight-not-transposed",
                "missing-bias", "no-output-projection"]:
        save(bug, a, attention(a, mha, bug), mha)
    save("mask-on-queries", p, attention(p, pad, "mask-on-queries"), pad)
    save("kv-repeat-order", g, attention(g, gqa, "kv-repeat-order"), gqa)
    save("unstable-softmax", big, attention(big, mha, "unstable-softmax"), mha)
    # outside the catalogue: the scores divided by 2·√Dk
    save("outside-temperature", a, attention(a, mha, "temperature-twice"), mha)
    # float64, a mistake: the tighter tolerance still names it
    save("no-scale-f64", a, attention(a, mha, "no-scale", dtype=np.float64), mha)
    print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
