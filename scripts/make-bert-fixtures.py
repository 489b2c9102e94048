#!/usr/bin/env python3
"""scripts/make-bert-fixtures.py: a small random BERT of another shape than MiniLM, and its reference
outputs, for the C++ tests of the config-driven encoder.

Writes tests/fixtures/bert-tiny/ with the reference implementations (not code of this project):
  vocab.txt      the five special tokens, then words and ## pieces (cased: upper and lower case
                 both), 300 tokens in all
  tokenizer_config.json   do_lower_case false: a cased model, so the lower-casing switch is tested
  model          transformers' BertModel from BertConfig(hidden 64, 2 layers, 4 heads,
                 intermediate 96, 64 positions, vocab 300), randomly initialised (seeded), with
                 every bias and LayerNorm parameter drawn too so none is trivial; saved with
                 save_pretrained (config.json + model.safetensors, float32)
  reference.safetensors   for each text of reference.json: the ids BertTokenizer(do_lower_case=False)
                 gives, the last hidden state (T, D) and every layer's attention weights (H, T, T)
                 from BertModel(attn_implementation="eager", output_attentions=True), float32
  reference.json the texts and their ids and tokens (the fast and the slow tokenizer must agree)

The script makes its own virtual environment the first time (PyPI's torch and transformers; the
same default /tmp/venv-gpt2 as make-gpt2-fixtures.py): run it with any python3.
Usage: python3 scripts/make-bert-fixtures.py [--venv DIR]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/fixtures/bert-tiny")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from venv_transformers import ensure_venv  # noqa: E402

ensure_venv(("torch", "transformers"))

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizer, BertTokenizerFast  # noqa: E402

WORDS = ("the The a A cat Cat dog sat on mat and it was tired because street animal did n't cross "
         "Hello hello world World how are you I am is what who where when why Paris paris France "
         "London King king Queen queen of to in for with by from at as be have has had do does "
         "not no yes very too much many more most some any all Café café Zürich naïve").split()
PIECES = ["##s", "##ed", "##ing", "##ly", "##er", "##est", "##t", "##e", "##a", "##o", "##n", "##r"]
TEXTS = [
    "The cat sat on the mat",
    "the Cat sat on The mat and it was tired",
    "Hello, World! How are you?",
    "Paris is in France; paris is not London.",
    "Café in Zürich, naïve King and Queen",
    "The animal did n't cross the street because it was too tired",
    "cats walked slowly [MASK] the dog",
    "中文 and 😀 are [UNK] here",
    "a",
]


def main():
    os.makedirs(OUT, exist_ok=True)
    chars = sorted({c for w in WORDS for c in w if c.isalpha()} | set(".,!?;'"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars if c.isalpha()]
    vocab += [w for w in dict.fromkeys(WORDS) if w not in vocab] + [p for p in PIECES if p not in vocab]
    while len(vocab) < 300:
        vocab.append(f"[unused{len(vocab)}]")
    with open(os.path.join(OUT, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(OUT, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": False, "tokenizer_class": "BertTokenizer", "model_max_length": 64}, f, indent=2)

    torch.manual_seed(29)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=96, max_position_embeddings=64, type_vocab_size=2,
                     hidden_act="gelu", layer_norm_eps=1e-12, attn_implementation="eager")
    model = BertModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
    model.save_pretrained(OUT, safe_serialization=True)

    slow = BertTokenizer(os.path.join(OUT, "vocab.txt"), do_lower_case=False)
    fast = BertTokenizerFast(os.path.join(OUT, "vocab.txt"), do_lower_case=False)
    rows, tensors = [], {}
    for i, text in enumerate(TEXTS):
        ids = fast(text)["input_ids"]
        if slow(text)["input_ids"] != ids:
            sys.exit(f"the fast and the slow BertTokenizer disagree on {text!r}")
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True)
        rows.append({"text": text, "ids": ids, "tokens": fast.convert_ids_to_tokens(ids)})
        tensors[f"hidden.{i}"] = out.last_hidden_state[0].contiguous()
        for l, a in enumerate(out.attentions):
            tensors[f"attention.{i}.{l}"] = a[0].contiguous()
    save_file(tensors, os.path.join(OUT, "reference.safetensors"))
    with open(os.path.join(OUT, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": f"transformers {transformers.__version__}, torch {torch.__version__}",
                   "texts": rows}, f, ensure_ascii=False, indent=1)
    print(f"wrote {OUT}: vocab {len(vocab)}, {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
