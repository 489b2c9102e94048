#!/usr/bin/env python3
"""scripts/make-model-fixtures.py: reference outputs of all-MiniLM-L6-v2 for the C++ tests.

Writes tests/fixtures/model/tokenizer.json and tests/fixtures/model/encoder.json
from the model folder scripts/fetch-model.sh fills, using the reference
implementations (not code of this project):
  token ids         HF `tokenizers` (the Rust WordPiece that sentence-transformers
                    runs), truncation at 256 = the model's max_seq_length; the
                    slow Python BertTokenizer of `transformers` is run too and any
                    disagreement between the two is printed
  sentence vectors  sentence-transformers: Transformer (BertModel) -> mean
                    pooling -> Normalize, the model's own modules.json pipeline
  attention weights transformers BertModel(output_attentions=True), layers 0 and 5

Environment that worked (python3-torch 1.13 from apt, so the venv sees it):
  python3 -m venv --system-site-packages /tmp/venv-model
  /tmp/venv-model/bin/pip install tokenizers 'transformers<4.40' 'numpy<2' \
      'scikit-learn<1.5' 'scipy<1.13' && /tmp/venv-model/bin/pip install --no-deps sentence-transformers==2.7.0
Usage: /tmp/venv-model/bin/python scripts/make-model-fixtures.py [MODEL_DIR]
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer
from transformers import BertModel, BertTokenizer
from sentence_transformers import SentenceTransformer, models

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "data/models/all-MiniLM-L6-v2")
OUT = os.path.join(ROOT, "tests/fixtures/model")
MAX_LEN = 256

TOKENIZER_TEXTS = [
    "The animal didn't cross the street because it was too tired",
    "Hello, world! How are you?",
    "  leading and   multiple   spaces\tand\ttabs\nand newlines  ",
    "Café, naïve, résumé, Ångström, São Paulo, Zürich, façade",
    "ÉCOLE ÉLÉMENTAIRE — İstanbul, ΣΊΣΥΦΟΣ, Straße, Œuvre",
    "Numbers: 3.14159, 1,000,000, 42nd, 2026-11-29, $19.99, 50% off, #1",
    "我爱自然语言处理。机器学习很有趣！",
    "Mixed 中文 and English: 北京 is in 中国.",
    "日本語のテキスト、カタカナとひらがな",
    "한국어 문장입니다",
    "Emoji 😀 and symbols ™ © ® ° ± × ÷ → ∞ ≠",
    "Control\u0000chars\u0007and\u200bzero\ufeffwidth\ufffd.",
    "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious",
    "x" * 120 + " short",
    "e-mail: someone@example.com, url: https://example.org/a_b?c=d&e=f",
    "quotes “curly” ‘single’ «guillemets» and ellipsis… and dash – —",
    "Ça va? ¿Qué tal? ¡Olé!",
    "",
    "   ",
    "a",
]


def fixed_floats(xs):
    return [float("%.7g" % x) for x in xs]


def main():
    if not os.path.exists(os.path.join(MODEL, "model.safetensors")):
        sys.exit(f"no model in {MODEL}: run scripts/fetch-model.sh first")
    os.makedirs(OUT, exist_ok=True)
    torch.set_grad_enabled(False)

    # pass 1: token ids from the Rust tokenizer, cross-checked with the Python one
    fast = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    fast.no_padding()
    fast.enable_truncation(max_length=MAX_LEN)
    slow = BertTokenizer(os.path.join(MODEL, "vocab.txt"), do_lower_case=True)
    long_text = " ".join(["tokenization"] * 150)  # 300 pieces: exercises truncation
    cases = []
    for text in TOKENIZER_TEXTS + [long_text]:
        enc = fast.encode(text)
        ids = enc.ids
        slow_ids = slow(text, truncation=True, max_length=MAX_LEN)["input_ids"]
        if slow_ids != ids:
            print(f"note: slow and fast tokenizers differ on {text[:40]!r}: {slow_ids} vs {ids}")
        cases.append({"text": text, "ids": ids, "tokens": enc.tokens})
    with open(os.path.join(OUT, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump({"source": "HF tokenizers %s, tokenizer.json of all-MiniLM-L6-v2, truncation %d"
                   % (__import__("tokenizers").__version__, MAX_LEN),
                   "max_len": MAX_LEN, "cases": cases}, f, ensure_ascii=False, indent=0)

    # pass 2: sentence embeddings from sentence-transformers
    st = SentenceTransformer(modules=[models.Transformer(MODEL, max_seq_length=MAX_LEN),
                                      models.Pooling(384, "mean"), models.Normalize()], device="cpu")
    sentences = [
        "The animal didn't cross the street because it was too tired",
        "A man is playing a guitar.",
        "Café naïve résumé",
        "我爱自然语言处理",
        "Numbers like 3.14159 and 1,000,000 matter.",
        "Short.",
        "This is a somewhat longer sentence, with several clauses, that needs padding in a batch "
        "with the short ones above; it checks the key-padding mask.",
    ]
    emb = st.encode(sentences, batch_size=len(sentences), convert_to_numpy=True)
    ids = [fast.encode(s).ids for s in sentences]

    # pass 3: attention weights of one sentence, layers 0 and 5, from BertModel
    bert = BertModel.from_pretrained(MODEL, attn_implementation="eager").eval()
    x = torch.tensor([ids[0]])
    out = bert(input_ids=x, attention_mask=torch.ones_like(x), output_attentions=True)
    att = {str(l): fixed_floats(out.attentions[l][0].flatten().tolist()) for l in (0, 5)}
    hidden = fixed_floats(out.last_hidden_state[0].flatten().tolist())
    with open(os.path.join(OUT, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump({"source": "sentence-transformers %s (BertModel of transformers %s, torch %s): "
                   "mean pooling + Normalize" % (__import__("sentence_transformers").__version__,
                                                 __import__("transformers").__version__, torch.__version__),
                   "sentences": [{"text": s, "ids": i, "embedding": fixed_floats(e.tolist())}
                                 for s, i, e in zip(sentences, ids, emb)],
                   "attention": {"text": sentences[0], "ids": ids[0], "layers": att,
                                 "shape": list(out.attentions[0][0].shape),
                                 "last_hidden": hidden,
                                 "last_hidden_shape": list(out.last_hidden_state[0].shape)}},
                  f, ensure_ascii=False, separators=(",", ":"))
    for name in ("tokenizer.json", "encoder.json"):
        print(f"wrote {os.path.join(OUT, name)} ({os.path.getsize(os.path.join(OUT, name))} bytes)")


if __name__ == "__main__":
    main()
