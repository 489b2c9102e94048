#!/usr/bin/env python3
"""Every activation of transformers' GPT2LMHeadModel on the tiny fixture, for `attn model cache`.

Reads tests/fixtures/gpt2-tiny (made by scripts/make-gpt2-fixtures.py) and runs its first two
reference texts through transformers with forward hooks on each module, writing
tests/fixtures/gpt2-tiny/activations.safetensors under the names attn's cache uses
(TransformerLens's): per text k and block l,

  cache.k.blocks.l.hook_resid_pre        (T, D)   the input of block l
  cache.k.blocks.l.ln1.hook_normalized   (T, D)   ln_1 output
  cache.k.blocks.l.attn.hook_q|k|v       (H, T, Dk) c_attn output, split as GPT2Attention splits it
  cache.k.blocks.l.attn.hook_z           (H, T, Dk) the input of attn.c_proj, split back into heads
  cache.k.blocks.l.hook_attn_out         (T, D)   attn.c_proj output
  cache.k.blocks.l.ln2.hook_normalized   (T, D)
  cache.k.blocks.l.mlp.hook_pre|post     (T, I)   c_fc output, act output
  cache.k.blocks.l.hook_mlp_out          (T, D)   mlp.c_proj output
  cache.k.blocks.l.hook_resid_post       (T, D)   the output of block l
  cache.k.ln_final.hook_normalized       (T, D)
  ids.k                                  (T)      int64

Uses the virtual environment of make-gpt2-fixtures.py (torch, transformers, safetensors):
    python3 scripts/make-gpt2-cache-fixture.py [--venv DIR]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests/fixtures/gpt2-tiny")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from venv_transformers import ensure_venv  # noqa: E402

ensure_venv(("torch", "transformers"))

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import GPT2LMHeadModel  # noqa: E402


def main():
    ref = load_file(os.path.join(DIR, "reference.safetensors"))
    model = GPT2LMHeadModel.from_pretrained(DIR, attn_implementation="eager").eval()
    cfg = model.config
    H, D = cfg.n_head, cfg.n_embd
    Dk = D // H
    out = {}

    def heads(x):  # (1, T, D) -> (H, T, Dk)
        return x[0].reshape(x.shape[1], H, Dk).transpose(0, 1).contiguous()

    for k in (0, 1):
        ids = ref[f"ids.{k}"]
        hooks, got = [], {}

        def keep(name, fn):
            def hook(module, inputs, output):
                got[name] = fn(inputs, output).detach().float().clone().contiguous()
            return hook

        for l, block in enumerate(model.transformer.h):
            b = f"cache.{k}.blocks.{l}."
            hooks += [
                block.register_forward_hook(keep(b + "hook_resid_pre", lambda i, o: i[0][0])),
                block.register_forward_hook(keep(b + "hook_resid_post", lambda i, o: o[0][0] if isinstance(o, tuple) else o[0])),
                block.ln_1.register_forward_hook(keep(b + "ln1.hook_normalized", lambda i, o: o[0])),
                block.attn.c_attn.register_forward_hook(keep(b + "attn.hook_q", lambda i, o: heads(o[..., :D]))),
                block.attn.c_attn.register_forward_hook(keep(b + "attn.hook_k", lambda i, o: heads(o[..., D:2 * D]))),
                block.attn.c_attn.register_forward_hook(keep(b + "attn.hook_v", lambda i, o: heads(o[..., 2 * D:]))),
                block.attn.c_proj.register_forward_hook(keep(b + "attn.hook_z", lambda i, o: heads(i[0]))),
                block.attn.c_proj.register_forward_hook(keep(b + "hook_attn_out", lambda i, o: o[0])),
                block.ln_2.register_forward_hook(keep(b + "ln2.hook_normalized", lambda i, o: o[0])),
                block.mlp.c_fc.register_forward_hook(keep(b + "mlp.hook_pre", lambda i, o: o[0])),
                block.mlp.act.register_forward_hook(keep(b + "mlp.hook_post", lambda i, o: o[0])),
                block.mlp.c_proj.register_forward_hook(keep(b + "hook_mlp_out", lambda i, o: o[0])),
            ]
        hooks.append(model.transformer.ln_f.register_forward_hook(keep(f"cache.{k}.ln_final.hook_normalized",
                                                                         lambda i, o: o[0])))
        with torch.no_grad():
            model(ids[None, :])
        for h in hooks:
            h.remove()
        out.update(got)
        out[f"ids.{k}"] = ids.to(torch.int64).contiguous()
    import transformers
    meta = {"made_by": "scripts/make-gpt2-cache-fixture.py",
            "versions": json.dumps({"torch": torch.__version__, "transformers": transformers.__version__})}
    save_file(out, os.path.join(DIR, "activations.safetensors"), metadata=meta)
    print(f"wrote {os.path.join(DIR, 'activations.safetensors')}: {len(out)} tensors")


if __name__ == "__main__":
    main()
