#!/usr/bin/python3
"""Make the fixtures that pin attn's training ops and TrainableStack to PyTorch autograd.

Writes tests/fixtures/train/ops.safetensors and tests/fixtures/train/model_*.safetensors.
Inputs are drawn here (torch.manual_seed), every result is computed by PyTorch in
float64 (autograd for the gradients) and stored rounded to float32, so the fixture is the
exact answer to float32 precision and the C++ float32 code is held to 1e-5 of it.

ops.safetensors:
  layernorm   F.layer_norm(x, (D,), w, b, eps=1e-5): ln.x, ln.w, ln.b, ln.dout -> ln.out, ln.dx, ln.dw, ln.db
  gelu        F.gelu(x, approximate='tanh'): gelu.x, gelu.dout -> gelu.out, gelu.dx
  embedding   wte[tokens] + pos[:T]: emb.tokens (as float), emb.wte, emb.pos, emb.dout -> emb.out, emb.dwte, emb.dpos
  xent        F.cross_entropy(logits, targets, ignore_index=-1): xent.logits, xent.targets (as float)
              -> xent.loss (1), xent.dlogits
model_NAME.safetensors: the TrainableStack of attn/nn/trainable_stack.hpp written out in torch
  (pre-LN blocks, q/k/v/o projections, causal mask or none, GELU tanh, final LN, untied head
  without bias), with the weights drawn here: "param.<name>" for every parameter,
  "tokens", "targets" (as float), "loss" (1) and "grad.<name>" = d loss / d param;
  __metadata__["attn.config"] is the model config in attn's JSON (checkpoint.hpp).

Run with Debian's python3 (python3-torch 1.13): /usr/bin/python3 scripts/make-train-golden.py
The tests (tests/test_nn_golden.cpp) read the committed files; they do not need PyTorch.
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "train")


def save(path, tensors, metadata):
    """A safetensors file: sorted names, F32, header padded to 8 bytes."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous()
        b = t.numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def r32(t):
    """Rounded to float32 (what the C++ side reads), then float64 for the computation."""
    return t.detach().to(torch.float32).to(torch.float64)


def leaf(t):
    return r32(t).clone().requires_grad_(True)


def make_ops():
    torch.manual_seed(11)
    T = {}
    # layernorm
    x = leaf(torch.randn(6, 10) * 2 + 0.5)
    w = leaf(torch.randn(10))
    b = leaf(torch.randn(10))
    dout = r32(torch.randn(6, 10))
    out = F.layer_norm(x, (10,), w, b, eps=1e-5)
    out.backward(dout)
    T.update({"ln.x": x, "ln.w": w, "ln.b": b, "ln.dout": dout, "ln.out": out, "ln.dx": x.grad, "ln.dw": w.grad, "ln.db": b.grad})
    # gelu (tanh)
    x = leaf(torch.randn(64) * 3)
    dout = r32(torch.randn(64))
    out = F.gelu(x, approximate="tanh")
    out.backward(dout)
    T.update({"gelu.x": x, "gelu.dout": dout, "gelu.out": out, "gelu.dx": x.grad})
    # embedding: token table and learned positions
    B, Tn, D, V, Tmax = 2, 5, 6, 7, 8
    tokens = torch.randint(0, V, (B, Tn))
    tokens[0, 1] = tokens[1, 3] = 2  # a repeated token: its gradient sums
    wte = leaf(torch.randn(V, D))
    pos = leaf(torch.randn(Tmax, D))
    dout = r32(torch.randn(B, Tn, D))
    out = F.embedding(tokens, wte) + pos[:Tn].unsqueeze(0)
    out.backward(dout)
    T.update({"emb.tokens": tokens.to(torch.float64), "emb.wte": wte, "emb.pos": pos, "emb.dout": dout, "emb.out": out,
              "emb.dwte": wte.grad, "emb.dpos": pos.grad})
    # cross-entropy with ignored targets and one large logit
    logits = torch.randn(7, 9) * 3
    logits[2, 4] = 60.0
    logits = leaf(logits)
    targets = torch.tensor([3, -1, 4, 0, 8, -1, 1])
    loss = F.cross_entropy(logits, targets, ignore_index=-1)
    loss.backward()
    T.update({"xent.logits": logits, "xent.targets": targets.to(torch.float64), "xent.loss": loss.reshape(1),
              "xent.dlogits": logits.grad})
    save(os.path.join(OUT, "ops.safetensors"), T, {"made_by": "scripts/make-train-golden.py", "torch": torch.__version__})


def model_forward(cfg, P, tokens, targets):
    B, Tn = tokens.shape
    D, H, dk, dv = cfg["d_model"], cfg["heads"], cfg["d_k"], cfg["d_v"]
    x = F.embedding(tokens, P["tok_emb.weight"]) + P["pos_emb.weight"][:Tn].unsqueeze(0)
    for l in range(cfg["layers"]):
        p = "blocks.%d." % l
        h = F.layer_norm(x, (D,), P[p + "ln1.weight"], P[p + "ln1.bias"], eps=1e-5)
        q = F.linear(h, P[p + "attn.q_proj.weight"], P[p + "attn.q_proj.bias"]).view(B, Tn, H, dk).transpose(1, 2)
        k = F.linear(h, P[p + "attn.k_proj.weight"], P[p + "attn.k_proj.bias"]).view(B, Tn, H, dk).transpose(1, 2)
        v = F.linear(h, P[p + "attn.v_proj.weight"], P[p + "attn.v_proj.bias"]).view(B, Tn, H, dv).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(dk)  # (B, H, T, T)
        if cfg["causal"]:
            allowed = torch.ones(Tn, Tn, dtype=torch.bool).tril()
            s = s.masked_fill(~allowed, float("-inf"))
        a = torch.softmax(s, dim=-1)
        o = (a @ v).transpose(1, 2).reshape(B, Tn, H * dv)
        x = x + F.linear(o, P[p + "attn.o_proj.weight"], P[p + "attn.o_proj.bias"])
        h = F.layer_norm(x, (D,), P[p + "ln2.weight"], P[p + "ln2.bias"], eps=1e-5)
        f = F.gelu(F.linear(h, P[p + "mlp.fc1.weight"], P[p + "mlp.fc1.bias"]), approximate="tanh")
        x = x + F.linear(f, P[p + "mlp.fc2.weight"], P[p + "mlp.fc2.bias"])
    x = F.layer_norm(x, (D,), P["ln_f.weight"], P["ln_f.bias"], eps=1e-5)
    logits = F.linear(x, P["head.weight"])
    return F.cross_entropy(logits.reshape(B * Tn, -1), targets.reshape(-1), ignore_index=-1)


def param_shapes(cfg):
    D, V, QK, VV, Fd = cfg["d_model"], cfg["vocab"], cfg["heads"] * cfg["d_k"], cfg["heads"] * cfg["d_v"], cfg["d_ff"]
    s = [("tok_emb.weight", (V, D)), ("pos_emb.weight", (cfg["max_seq"], D))]
    for l in range(cfg["layers"]):
        p = "blocks.%d." % l
        s += [(p + "ln1.weight", (D,)), (p + "ln1.bias", (D,)), (p + "attn.q_proj.weight", (QK, D)), (p + "attn.q_proj.bias", (QK,)),
              (p + "attn.k_proj.weight", (QK, D)), (p + "attn.k_proj.bias", (QK,)), (p + "attn.v_proj.weight", (VV, D)),
              (p + "attn.v_proj.bias", (VV,)), (p + "attn.o_proj.weight", (D, VV)), (p + "attn.o_proj.bias", (D,)),
              (p + "ln2.weight", (D,)), (p + "ln2.bias", (D,)), (p + "mlp.fc1.weight", (Fd, D)), (p + "mlp.fc1.bias", (Fd,)),
              (p + "mlp.fc2.weight", (D, Fd)), (p + "mlp.fc2.bias", (D,))]
    s += [("ln_f.weight", (D,)), ("ln_f.bias", (D,)), ("head.weight", (V, D))]
    return s


def make_model(name, causal, dk, dv, seed):
    torch.manual_seed(seed)
    cfg = {"vocab": 11, "max_seq": 9, "d_model": 12, "heads": 3, "d_k": dk, "d_v": dv, "layers": 2, "d_ff": 20,
           "causal": causal, "scale": "sqrt", "scale_value": 1.0, "dropout": 0.0, "pos": "learned", "act": "gelu",
           "init": "torch", "init_std": 0.02, "qk_init_gain": 1.0}
    P = {}
    for n, shape in param_shapes(cfg):
        if n.endswith("ln1.weight") or n.endswith("ln2.weight") or n == "ln_f.weight":
            t = 1 + 0.1 * torch.randn(shape)
        elif n.endswith(".bias"):
            t = 0.1 * torch.randn(shape)
        else:
            t = torch.randn(shape) / math.sqrt(shape[-1])
        P[n] = leaf(t)  # rounded to float32, so C++ starts from the same numbers
    B, Tn = 3, 8
    tokens = torch.randint(0, cfg["vocab"], (B, Tn))
    targets = torch.randint(0, cfg["vocab"], (B, Tn))
    targets[0, 0] = targets[2, 5] = -1
    loss = model_forward(cfg, P, tokens, targets)
    loss.backward()
    T = {"tokens": tokens.to(torch.float64), "targets": targets.to(torch.float64), "loss": loss.reshape(1)}
    for n, _ in param_shapes(cfg):
        T["param." + n] = P[n]
        T["grad." + n] = P[n].grad
    save(os.path.join(OUT, "model_%s.safetensors" % name), T,
         {"made_by": "scripts/make-train-golden.py", "torch": torch.__version__, "attn.config": json.dumps(cfg)})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.set_default_dtype(torch.float64)
    make_ops()
    make_model("decoder", True, 4, 4, 21)
    make_model("encoder_dk_ne_dv", False, 3, 5, 22)
    print("wrote", sorted(os.listdir(OUT)))
