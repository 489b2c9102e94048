#!/usr/bin/env python3
"""scripts/make-st-fixtures.py: a sentence-transformers folder as SentenceTransformer.save writes it today,
for the C++ tests that read model folders as users have them.

Writes tests/fixtures/st-tiny/ with the reference implementations (not code of this project):
  a tiny random BERT (hidden 32, 2 layers, 4 heads, intermediate 48, 64 positions, a WordPiece vocabulary
  of 200 tokens, lower-casing), wrapped as SentenceTransformer([Transformer(max_seq_length=16),
  Pooling(mean), Normalize()]) and saved with SentenceTransformer.save: config.json, model.safetensors,
  tokenizer.json (no vocab.txt), tokenizer_config.json, sentence_bert_config.json, modules.json and
  1_Pooling/config.json in the new form ({"pooling_mode": "mean", ...}).
  reference.json: for each text, the token ids the tokenizer gives (cut at 16, as encode cuts) and the
  embedding SentenceTransformer.encode returns (float32, normalised), one text longer than 16 tokens.

And tests/fixtures/gpt2-t5/: a tiny random GPT-2 (n_embd 32, 2 layers, 4 heads, 64 positions) with the
byte-level BPE of tests/fixtures/gpt2-tiny, saved by transformers 5's save_pretrained (model and tokenizer):
config.json, generation_config.json, model.safetensors, tokenizer.json and tokenizer_config.json (no
vocab.json or merges.txt). reference.json: for each text its ids and the next-token probabilities of the
last position (float32).

Pinned: torch 2.15.0, transformers 5.25.0, sentence-transformers 6.3.0. The script makes its own virtual
environment the first time (default /tmp/venv-st; --venv DIR for another): run it with any python3.
Usage: python3 scripts/make-st-fixtures.py [--venv DIR]
"""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/fixtures/st-tiny")
PINNED = ["torch==2.15.0", "transformers==5.25.0", "sentence-transformers==6.3.0", "safetensors", "numpy"]


def ensure_venv():
    try:
        import sentence_transformers  # noqa: F401
        import transformers  # noqa: F401
        if sentence_transformers.__version__ == "6.3.0" and transformers.__version__ == "5.25.0":
            return
    except ImportError:
        pass
    venv = sys.argv[sys.argv.index("--venv") + 1] if "--venv" in sys.argv else "/tmp/venv-st"
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "--progress-bar", "off"] + PINNED)
    os.execv(py, [py] + sys.argv)


ensure_venv()

import torch  # noqa: E402
import transformers  # noqa: E402
import sentence_transformers  # noqa: E402
from sentence_transformers import SentenceTransformer, models  # noqa: E402
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors, decoders  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizerFast  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast  # noqa: E402

WORDS = ("the a cat sat on mat and it was tired because street animal didn t cross hello world how are you "
         "i am is what who where when why paris france london king queen of to in for with by from at as be "
         "have has had do does not no yes very too much many more most some any all cafe naive").split()
PIECES = ["##s", "##ed", "##ing", "##ly", "##er", "##est"]
TEXTS = [
    "The cat sat on the mat",
    "Hello, World! How are you?",
    "Café in Zürich, naïve King and Queen",
    "",
    # longer than max_seq_length 16: encode cuts it, and so must attn
    "The animal didn't cross the street because it was too tired, and the cat sat on the mat all day",
    "中文 and 😀 are here",
]


def tokenizer_json(vocab):
    """A BERT WordPiece tokenizer as tokenizers builds one (what BertTokenizerFast saves)."""
    tok = Tokenizer(WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))])
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def main():
    tmp = OUT + ".build"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    chars = sorted({c for w in WORDS for c in w if c.isalpha()} | set(".,!?;'"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars if c.isalpha()]
    vocab += [w for w in dict.fromkeys(WORDS) if w not in vocab] + [p for p in PIECES if p not in vocab]
    while len(vocab) < 200:
        vocab.append(f"[unused{len(vocab)}]")
    hf_tok = BertTokenizerFast(tokenizer_object=tokenizer_json(vocab), unk_token="[UNK]", sep_token="[SEP]",
                               pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True,
                               model_max_length=16)

    torch.manual_seed(31)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, type_vocab_size=2, hidden_act="gelu",
                     layer_norm_eps=1e-12)
    bert = BertModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in bert.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
    src = os.path.join(tmp, "src")
    bert.save_pretrained(src, safe_serialization=True)
    hf_tok.save_pretrained(src)

    word = models.Transformer(src, max_seq_length=16)
    pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    st = SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu")
    saved = os.path.join(tmp, "st")
    st.save(saved)
    # the folder as saved, nothing added or removed
    shutil.rmtree(OUT, ignore_errors=True)
    shutil.copytree(saved, OUT)
    if os.path.exists(os.path.join(OUT, "vocab.txt")):
        sys.exit("SentenceTransformer.save wrote a vocab.txt: the fixture would not test tokenizer.json alone")

    loaded = SentenceTransformer(OUT, device="cpu")
    emb = loaded.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=False)
    rows = []
    for text, e in zip(TEXTS, emb):
        ids = loaded.tokenizer(text, truncation=True, max_length=loaded.max_seq_length)["input_ids"]
        full = loaded.tokenizer(text)["input_ids"]
        rows.append({"text": text, "ids": ids, "full_length": len(full),
                     "embedding": [float(x) for x in e.astype("float32")]})
    with open(os.path.join(OUT, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": f"sentence-transformers {sentence_transformers.__version__}, transformers "
                              f"{transformers.__version__}, torch {torch.__version__}",
                   "max_seq_length": loaded.max_seq_length, "texts": rows}, f, ensure_ascii=False, indent=1)
    shutil.rmtree(tmp)
    print(f"wrote {OUT}: vocab {len(vocab)}, {len(TEXTS)} texts; files: {sorted(os.listdir(OUT))}")


def gpt2_folder():
    out = os.path.join(ROOT, "tests/fixtures/gpt2-t5")
    tok = GPT2TokenizerFast(tokenizer_file=os.path.join(ROOT, "tests/fixtures/gpt2-tiny/tokenizer.json"))
    torch.manual_seed(37)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg).eval()
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    for gone in ("vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(out, gone)):
            sys.exit(f"save_pretrained wrote {gone}: the fixture would not test tokenizer.json alone")
    rows = []
    for text in ["hello world, the cat", "The quick brown fox", "a"]:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            probs = torch.softmax(model(torch.tensor([ids])).logits[0, -1], -1)
        rows.append({"text": text, "ids": ids, "next_probs": [float(p) for p in probs.float()]})
    with open(os.path.join(out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": f"transformers {transformers.__version__}, torch {torch.__version__}", "texts": rows}, f,
                  indent=0)
    print(f"wrote {out}: files {sorted(os.listdir(out))}")


if __name__ == "__main__":
    main()
    gpt2_folder()
