#!/usr/bin/env python3
"""scripts/make-tokenizer-json-fixture.py: tests/fixtures/gpt2-tiny/tokenizer.json, the tiny GPT-2's
tokenizer as Hugging Face's fast-tokenizer file, written by the reference implementation.

transformers' GPT2TokenizerFast reads the fixture's vocab.json + merges.txt (made by
scripts/make-gpt2-fixtures.py) and HF tokenizers saves it as tokenizer.json (model BPE, merges as
[a, b] arrays as tokenizers >= 0.20 writes them, <|endoftext|> as an added token, ByteLevel
pre-tokenizer and decoder). Before writing, the script encodes every text of tokens.json with
the fast tokenizer and stops if any ids differ from the stored ones (GPT2Tokenizer's), so the
file the C++ tests read is known to tokenise as the vocab.json + merges.txt pair does.

The script makes its own virtual environment the first time (as make-gpt2-fixtures.py; the same
default /tmp/venv-gpt2): run it with any python3.
Usage: python3 scripts/make-tokenizer-json-fixture.py [--venv DIR]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests/fixtures/gpt2-tiny")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from venv_transformers import ensure_venv  # noqa: E402

ensure_venv(("transformers", "tokenizers"))

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import GPT2TokenizerFast  # noqa: E402


def main():
    tok = GPT2TokenizerFast.from_pretrained(DIR)
    fast = tok.backend_tokenizer
    rows = json.load(open(os.path.join(DIR, "tokens.json"), encoding="utf-8"))["texts"]
    bad = [r["text"] for r in rows if fast.encode(r["text"]).ids != r["ids"]]
    if bad:
        sys.exit(f"the fast tokenizer disagrees with tokens.json on {len(bad)} texts, e.g. {bad[0]!r}")
    out = os.path.join(DIR, "tokenizer.json")
    fast.save(out)
    j = json.load(open(out, encoding="utf-8"))
    print(f"wrote {out}: {len(j['model']['vocab'])} tokens, {len(j['model']['merges'])} merges "
          f"(transformers {transformers.__version__}, tokenizers {tokenizers.__version__}); "
          f"ids identical to tokens.json on {len(rows)} texts")


if __name__ == "__main__":
    main()
