#!/usr/bin/env python3
"""scripts/make-gpt2-fixtures.py: a tiny random GPT-2 and its reference outputs for the C++ tests.

Writes tests/fixtures/gpt2-tiny/ (and the same model stored in float16 and bfloat16 in
tests/fixtures/gpt2-tiny-f16/ and gpt2-tiny-bf16/), using the reference implementations
(not code of this project):
  vocabulary    a byte-level BPE of a few hundred merges, trained here on data/macbeth.txt
                (GPT-2's own 50257-token vocabulary is too big to commit), written as
                vocab.json + merges.txt exactly as GPT-2's are
  model         transformers' GPT2LMHeadModel with a random initialisation (seeded), every
                weight, bias and LayerNorm parameter drawn so that none is trivial, saved
                with save_pretrained (config.json + model.safetensors, float32)
  tokens.json   >= 200 texts (Chinese, emoji, accents, whitespace runs, control characters,
                "<|endoftext|>" typed in the text, contractions) and their ids from
                transformers' GPT2Tokenizer (HF tokenizers' ByteLevel BPE); the same ids are
                computed again by GPT-2's original encoder.py algorithm (the `regex` module)
                and any disagreement between the two is printed
  reference.safetensors   for a few texts: the ids, the logits (T, V) and every layer's
                attention weights (H, T, T) from GPT2LMHeadModel(attn_implementation="eager",
                output_attentions=True), and the 12 tokens greedy decoding adds
                (model.generate(do_sample=False))
  tokenizer.json   the same tokenizer as HF tokenizers saves it (scripts/make-tokenizer-json-fixture.py,
                run at the end)
The f16 / bf16 folders hold the weights rounded to that type and the logits the rounded
model gives in float32.

The script makes its own virtual environment the first time (PyPI's torch and transformers,
a few minutes): run it with any python3.
Usage: python3 scripts/make-gpt2-fixtures.py [--venv DIR]   (default DIR: /tmp/venv-gpt2)
"""
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/fixtures/gpt2-tiny")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from venv_transformers import ensure_venv  # noqa: E402

ensure_venv(("torch", "transformers", "regex"))

import regex  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer  # noqa: E402

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
EOT = "<|endoftext|>"
MERGES = 250
SEED = 29
HALF_TEXT = "Fair is foul, and foul is fair"  # the half-precision folders' reference forward


def bytes_to_unicode():
    # GPT-2's encoder.py
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()


def mapped(word):
    return "".join(B2U[b] for b in word.encode("utf-8"))


def train_bpe(text, n_merges):
    """Plain BPE training: the most frequent adjacent pair (ties: the smallest pair) is merged, n times."""
    counts = {}
    for w in PATTERN.findall(text):
        m = tuple(mapped(w))
        counts[m] = counts.get(m, 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, c in counts.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new = {}
        for w, c in counts.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        counts = new
    return merges


def encoder_py(text, vocab, ranks):
    """GPT-2's encoder.py (Encoder.encode + bpe), with the special token split out first as HF does."""
    def bpe(token):
        word = tuple(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            bigram = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if bigram not in ranks:
                break
            first, second = bigram
            new, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new.extend(word[i:])
                    break
                new.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new.append(first + second)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = tuple(new)
        return word

    ids = []
    parts = text.split(EOT)
    for k, part in enumerate(parts):
        for tok in PATTERN.findall(part):
            ids.extend(vocab[s] for s in bpe(mapped(tok)))
        if k + 1 < len(parts):
            ids.append(vocab[EOT])
    return ids


def texts():
    t = [
        "Hello world",
        "The animal didn't cross the street because it was too tired.",
        "When Mary and John went to the store, John gave a drink to",
        "Fair is foul, and foul is fair: hover through the fog and filthy air.",
        "I'm sure you'll see they've done what we'd said isn't right",
        "IT'S LOUD: DON'T SHOUT, WE'LL HEAR",
        "'s 't 're 've 'm 'll 'd",
        "''s '''t 'S 'Re",
        "Café, naïve, résumé, Ångström, São Paulo, Zürich, façade",
        "e\u0301 (e + combining acute) vs \u00e9",
        "我爱自然语言处理。机器学习很有趣！",
        "Mixed 中文 and English: 北京 is in 中国.",
        "日本語のテキスト、カタカナとひらがな",
        "한국어 문장입니다",
        "Привет, мир! Как дела?",
        "مرحبا بالعالم",
        "नमस्ते दुनिया",
        "Ελληνικά γράμματα",
        "Emoji 😀 and 👩‍👩‍👧 family, flags 🇫🇷🇯🇵, skin 👍🏽",
        "symbols ™ © ® ° ± × ÷ → ∞ ≠ ½ ²³ ⅷ",
        "Numbers: 3.14159, 1,000,000, 42nd, 2026-11-29, $19.99, 50% off, #1",
        "١٢٣ ٤٥٦ and ①②③ and 一二三",
        "    four leading spaces",
        "trailing spaces    ",
        "a  b   c    d     e",
        "tabs\tand\t\ttabs\t",
        "new\nline\n\nand\r\nCRLF\n",
        "\n\n\n",
        " ",
        "",
        "   \t  \n  x",
        "no\u00a0break\u3000ideographic\u2009thin\u2028line sep\u2029para",
        "Control\u0000chars\u0007and\u001b[31mANSI\u001b[0m",
        "file\u001cgroup\u001drecord\u001eunit\u001f sep",
        "zero\u200bwidth\ufeffbom\u200d joiner \u00ad soft hyphen",
        "del\u007f and next line\u0085 here",
        "<|endoftext|>",
        "Once upon a time<|endoftext|>The end",
        " <|endoftext|> spaced <|endoftext|> ",
        "<|endoftext|><|endoftext|>",
        "<|endoftext|  <|endoftext| |endoftext|> <|ENDOFTEXT|>",
        "def f(x):\n    return x ** 2  # square\n",
        "if (a && b) || !c { x += 1; }",
        "e-mail: someone@example.com, url: https://example.org/a_b?c=d&e=f",
        "quotes “curly” ‘single’ «guillemets» and ellipsis… and dash – —",
        "Ça va? ¿Qué tal? ¡Olé!",
        "...!!!???,,,;;;",
        "a" * 200,
        "ab" * 60 + " " + "xyz" * 30,
        "Tomorrow, and tomorrow, and tomorrow, creeps in this petty pace from day to day",
        "MACBETH. If it were done when 'tis done, then 'twere well it were done quickly",
        "1 2 3 4 5 6 7 8 9 10 11 12 100 1000 10000",
        "x²+y²=z²",
        "ﬁ ligature, Ⅻ numeral, ㎏ unit",
        "\U0001f600\U0001f601\U0001f602",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters 𝟙𝟚𝟛",
        "Straße ÉCOLE İstanbul ΣΊΣΥΦΟΣ Œuvre",
        "a's b't c're d've e'm f'll g'd",
        "don't won't can't shouldn't",
        "  's  't",
        "word's",
        "?'s",
        " 's",
    ]
    rng = random.Random(SEED)
    pieces = ["the", "The", " ", "  ", "\t", "\n", "'s", "'ll", "'", "don't", "中文", "字", "😀", "🇯🇵", "é",
              "e\u0301", "123", "4.5", "Ω", "ß", "…", "!", "?!", ",", "<|endoftext|>", "\u0000", "\u001f", "\u00a0",
              "\u3000", "\u2028", "\u200b", "naïve", "Привет", "مرحبا", "١٢", "x", "Fair", "foul", "\r\n", "~",
              "$", "%", "@", "ab", "_", "-", "—", "«", "»", "ⅷ", "²"]
    while len(t) < 240:
        n = rng.randint(1, 12)
        t.append("".join(rng.choice(pieces) for _ in range(n)))
    return t


def main():
    torch.manual_seed(SEED)
    corpus = open(os.path.join(ROOT, "data/macbeth.txt"), encoding="utf-8").read()
    merges = train_bpe(corpus, MERGES)
    vocab = {}
    for b in range(256):
        vocab[B2U[b]] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    vocab[EOT] = len(vocab)
    V = len(vocab)

    os.makedirs(OUT, exist_ok=True)
    cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=2, n_inner=None,
                     activation_function="gelu_new", layer_norm_epsilon=1e-5, bos_token_id=vocab[EOT],
                     eos_token_id=vocab[EOT], resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg)
    # nothing trivial: LayerNorms away from (1, 0), biases non-zero, weights large enough that
    # the attention is far from uniform
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln_" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))
    model.eval()
    model.save_pretrained(OUT, safe_serialization=True)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(OUT, extra)):
            os.remove(os.path.join(OUT, extra))
    with open(os.path.join(OUT, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(OUT, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")

    tok = GPT2Tokenizer.from_pretrained(OUT)
    ranks = {m: i for i, m in enumerate(merges)}
    rows, disagree = [], 0
    for text in texts():
        ids = tok(text, add_special_tokens=False)["input_ids"]
        ref = encoder_py(text, vocab, ranks)
        if ids != ref:
            disagree += 1
            print(f"tokenizers and encoder.py disagree on {text!r}:\n  {ids}\n  {ref}")
        rows.append({"text": text, "ids": ids, "encoder_py": ref})
    with open(os.path.join(OUT, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer": f"transformers {__import__('transformers').__version__} GPT2Tokenizer "
                                f"(tokenizers {__import__('tokenizers').__version__})",
                   "texts": rows}, f, ensure_ascii=True, indent=0)

    eager = GPT2LMHeadModel.from_pretrained(OUT, attn_implementation="eager").eval()
    ref_texts = ["When Mary and John went to the store, John gave a drink to",
                 "我爱 Fair is foul 😀<|endoftext|> and\n\n  foul is fair",
                 "a"]
    tensors, meta = {}, {"texts": json.dumps(ref_texts, ensure_ascii=True), "layers": str(cfg.n_layer)}
    with torch.no_grad():
        for k, text in enumerate(ref_texts):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            x = torch.tensor([ids])
            out = eager(x, output_attentions=True)
            tensors[f"ids.{k}"] = torch.tensor(ids, dtype=torch.int64)
            tensors[f"logits.{k}"] = out.logits[0].float().contiguous()
            for layer, a in enumerate(out.attentions):
                tensors[f"attention.{k}.{layer}"] = a[0].float().contiguous()
            gen = eager.generate(x, max_new_tokens=12, do_sample=False, pad_token_id=vocab[EOT],
                                 attention_mask=torch.ones_like(x))
            tensors[f"greedy.{k}"] = gen[0, len(ids):].to(torch.int64).contiguous()
    save_file(tensors, os.path.join(OUT, "reference.safetensors"), metadata=meta)

    # the same model stored in half precision: the logits of the rounded weights, in float32
    for dtype, suffix in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        d = OUT + "-" + suffix
        os.makedirs(d, exist_ok=True)
        half = GPT2LMHeadModel.from_pretrained(OUT, attn_implementation="eager").to(dtype)
        half.save_pretrained(d, safe_serialization=True)
        if os.path.exists(os.path.join(d, "generation_config.json")):
            os.remove(os.path.join(d, "generation_config.json"))
        for name in ("vocab.json", "merges.txt"):
            with open(os.path.join(OUT, name), "rb") as src, open(os.path.join(d, name), "wb") as dst:
                dst.write(src.read())
        back = GPT2LMHeadModel.from_pretrained(d, attn_implementation="eager", dtype=torch.float32).eval()
        ids = tok(HALF_TEXT, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = back(torch.tensor([ids])).logits[0].float().contiguous()
        save_file({"ids.0": torch.tensor(ids, dtype=torch.int64), "logits.0": logits},
                  os.path.join(d, "reference.safetensors"))

    print(f"wrote {OUT}: vocabulary {V} tokens ({len(merges)} merges), {len(rows)} texts "
          f"({disagree} where tokenizers and encoder.py disagree), {len(ref_texts)} reference forwards")
    # the same tokenizer as tokenizer.json, checked against tokens.json there
    subprocess.check_call([sys.executable, os.path.join(ROOT, "scripts/make-tokenizer-json-fixture.py")])


if __name__ == "__main__":
    main()
