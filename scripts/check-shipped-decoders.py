#!/usr/bin/env python3
"""scripts/check-shipped-decoders.py: the decoders attn ships, opened by transformers.

For each folder in data/decoders/ (written by `attn train --export-gpt2`), loads it with
transformers' GPT2LMHeadModel.from_pretrained and GPT2Tokenizer (vocab.json + merges.txt),
tokenises a few texts, and records the ids and the logits (T, V) transformers computes
(attn_implementation="eager", float32) in tests/fixtures/shipped-decoders.safetensors.
tests/test_gpt2_export.cpp checks that attn's tokenizer gives the same ids and its forward
pass the same logits (1e-4 of the logit scale). Run it again whenever a shipped decoder is
retrained.

The script makes its own virtual environment the first time (PyPI's torch and transformers,
a few minutes): run it with any python3.
Usage: python3 scripts/check-shipped-decoders.py [--venv DIR]   (default DIR: /tmp/venv-gpt2)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/fixtures/shipped-decoders.safetensors")

# Texts each decoder can spell (the induction decoder knows a-z, A-Z, 0-9 and two more).
TEXTS = {
    "macbeth-char": [
        "When shall we three meet again",
        "MACBETH. Is this a dagger which I see before me,\nThe handle toward my hand?",
        "LADY MACBETH. Out, damned spot!",
    ],
    "induction-2l": [
        "QmZk7pWx2vBnQmZk7pWx2v",
        "abcdefghijklmnopabcdefghijklmnop",
        "x9Lr0Tq3x9Lr0Tq3",
    ],
}


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from venv_transformers import ensure_venv  # noqa: E402

ensure_venv(("torch", "transformers"))

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import GPT2LMHeadModel, GPT2Tokenizer  # noqa: E402


def main():
    tensors = {}
    for name, texts in TEXTS.items():
        folder = os.path.join(ROOT, "data/decoders", name)
        model = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
        tok = GPT2Tokenizer(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
        for i, text in enumerate(texts):
            ids = tok.encode(text)
            assert len(ids) == len(text.encode("utf-8")), f"{name}: '{text}' is not one token a byte"
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0]
            tensors[f"{name}.{i}.ids"] = torch.tensor(ids, dtype=torch.int64)
            tensors[f"{name}.{i}.logits"] = logits.float().contiguous()
            top = int(logits[-1].argmax())
            print(f"{name}: {text!r}: {len(ids)} tokens, next token {tok.decode([top])!r}")
    meta = {"texts": json.dumps(TEXTS), "transformers": __import__("transformers").__version__,
            "torch": torch.__version__}
    save_file(tensors, OUT, metadata=meta)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
