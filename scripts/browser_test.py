#!/usr/bin/env python3
"""Loads attn's --html pages in headless Chromium over the DevTools protocol and
checks what a person would see: no console error or CSP violation, no network
request, every head drawn, a hover that shows the dump's weight, the XSS probe
inert, the zh UI; writes a PNG screenshot of each view and a JSON summary.

  scripts/browser_test.py --attn build/attn --out DIR [--chromium PATH]

Exit 0 when every check passes, 1 when one fails, 77 (skip) when no Chromium is
found. Standard library only: the WebSocket client is the few lines below.
"""
import argparse
import base64
import json
import math
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

SKIP = 77
SENTENCE = "The animal didn't cross the street because it was too tired."


# ---- a minimal WebSocket client (RFC 6455: client frames masked, no extensions)
class WebSocket:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: " + head.split(b"\r\n")[0].decode())
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text):
        data = text.encode()
        hdr = bytes([0x81])
        n = len(data)
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise RuntimeError("websocket closed by the browser")
            if op in (0x9, 0xA):  # ping / pong: ignore
                continue
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Browser:
    def __init__(self, chromium, workdir):
        self.profile = tempfile.mkdtemp(prefix="attn-chromium-", dir=workdir)
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=1280,900",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url, deadline = None, time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            if "DevTools listening on" in line:
                url = line.split("DevTools listening on", 1)[1].strip()
                break
        if url is None:
            self.close()
            raise RuntimeError("chromium did not start its DevTools endpoint")
        self.ws = WebSocket(url)
        self.next_id = 0
        self.events = []
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r.get("result", {})
            self.events.append(r)

    def pump(self, seconds):
        """Collects events for a while (the page's console, network, CSP reports)."""
        self.ws.sock.settimeout(seconds)
        try:
            while True:
                self.events.append(json.loads(self.ws.recv()))
        except (socket.timeout, TimeoutError):
            pass
        finally:
            self.ws.sock.settimeout(60)

    def open_tab(self):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for dom in ("Page", "Runtime", "Log", "Network"):
            self.call(dom + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1,
                                                           "mobile": False})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate {expr!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path, full=True):
        params = {"format": "png", "captureBeyondViewport": full}
        if full:
            w, h = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": min(w, 2400), "height": min(h, 3000), "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def find_chromium(given):
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Checks:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what):
        print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
        if not ok:
            self.failed += 1
        return ok


def attn(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"attn {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r.stdout


def softmax_rows(rng, n, causal_row=None):
    xs = [math.exp(2 * rng.gauss(0, 1)) for _ in range(n)]
    if causal_row is not None:
        xs = [x if j <= causal_row else 0.0 for j, x in enumerate(xs)]
    s = sum(xs)
    return [x / s for x in xs]


def model_dump(path, L, H, T, tokens, seed):
    """An attn-dump with "attention" [L, 1, H, T, T], as `attn model attention --dump` writes it."""
    rng = random.Random(seed)
    data = []
    for _ in range(L * H):
        for i in range(T):
            data.extend(round(x, 6) for x in softmax_rows(rng, T))
    with open(path, "w") as f:
        json.dump({"format": "attn-dump", "version": 1, "config": {"tokens": tokens, "layers": L, "heads": H},
                   "tensors": {"attention": {"shape": [L, 1, H, T, T], "data": data}}}, f)


def synthetic_safetensors(path, L, H, T, seed):
    """A .safetensors dump with "attention" [L, 1, H, T, T] in float16, too big for JSON: each head's
    rows are one random softmax row shifted along the keys (a relative-position head), some with a
    strong diagonal. Standard library only, so it is quick at T = 512 without numpy. Returns each
    head's base row: weight (head k, query i, key j) = base[k][(j - i) % T], rounded to float16."""
    rng = random.Random(seed)
    bases = []
    with open(path, "wb") as f:
        header = json.dumps({"attention": {"dtype": "F16", "shape": [L, 1, H, T, T],
                                           "data_offsets": [0, 2 * L * H * T * T]}}).encode()
        header += b" " * (-len(header) % 8)
        f.write(struct.pack("<Q", len(header)) + header)
        for k in range(L * H):
            base = softmax_rows(rng, T)
            if k % 3 == 0:
                base = [0.5 * x for x in base]
                base[0] += 0.5
            row = struct.pack(f"<{T}e", *base)
            bases.append(struct.unpack(f"<{T}e", row))
            twice = row + row
            f.write(b"".join(twice[2 * (T - i):2 * (2 * T - i)] for i in range(T)))
    return bases


def page_errors(events, allowed):
    """What a page did wrong, from the DevTools events: (errors, requests), the errors being
    uncaught exceptions, console errors and log errors (CSP violations among them), the
    requests every URL the page asked for that allowed(url) refuses."""
    errors, requests = [], []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            errors.append(p["exceptionDetails"].get("text", "") + " " +
                          str(p["exceptionDetails"].get("exception", {}).get("description", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append("console." + p["type"] + ": " + " ".join(str(a.get("value", "")) for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            errors.append(p["entry"].get("source", "") + ": " + p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent" and not allowed(p["request"]["url"]):
            requests.append(p["request"]["url"])
    return errors, requests


def css_rules(path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "viz", "src",
                                 "html_page.css")):
    """How many rules the --html pages' style sheet has (a rule a browser cannot parse is dropped)."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return text.count("{")


def load_page(b, checks, path, name, out):
    """Opens one page in a fresh tab and runs the checks every page must pass. Returns its figures."""
    b.events.clear()
    b.open_tab()
    url = "file://" + os.path.abspath(path)
    t0 = time.time()
    b.call("Page.navigate", {"url": url})
    ready = False
    while time.time() - t0 < 30:
        b.pump(0.05)
        if b.eval("document.body && document.body.dataset.ready === '1'"):
            ready = True
            break
    wall = time.time() - t0
    b.pump(0.3)
    checks.check(ready, f"{name}: the page finished drawing")
    ready_ms = b.eval("performance.now()") if not ready else b.eval("Number(document.body.dataset.readyMs)")
    errors, requests = page_errors(b.events, lambda u: u == url)
    checks.check(not errors, f"{name}: no console error or CSP violation" + (f": {errors[:3]}" if errors else ""))
    checks.check(not requests, f"{name}: no network request" + (f": {requests[:3]}" if requests else ""))
    rules = b.eval("document.styleSheets.length ? document.styleSheets[0].cssRules.length : -1")
    checks.check(rules == css_rules(), f"{name}: Chromium parsed all {css_rules()} rules of lib/viz/src/html_page.css "
                 f"({rules})")
    L, H = b.eval("(function(){var d=JSON.parse(document.getElementById('attn-data').textContent);return [d.L,d.H];})()")
    drawn = b.eval("document.querySelectorAll('canvas.thumb[data-drawn=\"1\"]').length")
    checks.check(drawn == L * H, f"{name}: {drawn} of {L} x {H} heads drawn")
    return {"page": os.path.basename(path), "bytes": os.path.getsize(path), "heads": L * H,
            "open_ms": round(ready_ms, 1), "wall_s": round(wall, 2)}


def hover_cell(b, i, j):
    """Moves the mouse over matrix cell (i, j); returns the info line's weight."""
    x, y, cs = b.eval(f"""(function(){{var c=document.querySelector('canvas.matrix');c.scrollIntoView();
        var r=c.getBoundingClientRect(), cs=+c.dataset.cell;
        return [r.left+(+c.dataset.left)+{j}*cs, r.top+(+c.dataset.top)+{i}*cs, cs];}})()""")
    # the cell's middle; a cell of 1 or 2 px: the first whole pixel in it (the mouse lands on whole pixels)
    x, y = (x + cs / 2, y + cs / 2) if cs >= 3 else (math.ceil(round(x, 3)), math.ceil(round(y, 3)))
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    b.pump(0.1)
    return b.eval("[document.getElementById('mx-info').dataset.i, document.getElementById('mx-info').dataset.j, "
                  "Number(document.getElementById('mx-info').dataset.w), document.getElementById('mx-info').textContent]")


def batch_checks(b, checks, dump_path, out):
    """A forward page of two batch rows: the selector shows row 1, whose padded keys are masked and
    whose weights the hover shows as the dump has them."""
    with open(dump_path) as f:
        w = json.load(f)["tensors"]["weights"]["data"]  # [2, 2, 6, 6]
    n = b.eval("document.getElementById('sel-batch') ? document.getElementById('sel-batch').options.length : 0")
    b.eval("document.querySelector('button[data-view=matrix]').click()")
    b.eval("(function(){var s=document.getElementById('sel-batch');s.value='1';s.dispatchEvent(new Event('change'));})()")
    b.pump(0.2)
    maxerr = b.eval("JSON.parse(document.getElementById('attn-data').textContent).maxerr")
    got = [hover_cell(b, i, j) for (i, j) in ((1, 1), (4, 2), (2, 4))]
    want = [w[((1 * 2 + 0) * 6 + i) * 6 + j] for (i, j) in ((1, 1), (4, 2))]
    ok = n == 2 and all(abs(g[2] - x) <= maxerr + 1e-7 for g, x in zip(got, want)) and "masked" in got[2][3]
    checks.check(ok, f"batch: a selector of {n} rows; row 1's hover shows the dump's weights "
                 f"({got[0][2]:.4f}, {got[1][2]:.4f} for {want[0]:.4f}, {want[1]:.4f}) and its padded key 4 masked")
    b.screenshot(os.path.join(out, "batch-row1-matrix.png"), full=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attn", required=True, help="the attn binary")
    ap.add_argument("--out", required=True, help="folder for the pages, screenshots and summary.json")
    ap.add_argument("--chromium", help="the browser (default: chromium, chromium-browser or google-chrome on PATH)")
    ap.add_argument("--model", help="the MiniLM folder (default: $ATTN_MODEL_DIR, else data/models/all-MiniLM-L6-v2)")
    ap.add_argument("--open-limit-ms", type=float, default=1000,
                    help="the 12 x 12 heads, T = 512 page must draw within this (best of two loads; default 1000)")
    ap.add_argument("--tour-from", type=int, default=6, metavar="N", help="the tour page's first lesson (default 6)")
    ap.add_argument("--tour-to", type=int, default=8, metavar="N",
                    help="the tour page's last lesson (default 8: lessons 7 and 8 show weights; 0: no tour page)")
    a = ap.parse_args()
    chromium = find_chromium(a.chromium)
    if chromium is None:
        print("SKIPPED: no Chromium found (install Debian's chromium to run the browser test)")
        return SKIP
    os.makedirs(a.out, exist_ok=True)
    checks, figures = Checks(), []

    # ---- the pages
    probe = "<img src=x onerror=window.__xss=1>"
    fwd_html, fwd_dump = os.path.join(a.out, "forward.html"), os.path.join(a.out, "forward.json")
    attn(a.attn, "forward", "--seq", "8", "--heads", "4", "--d-model", "32", "--batch", "1", "--mask", "causal",
         "--seed", "3", "--dump", fwd_dump, "--html", fwd_html)
    with open(fwd_dump) as f:
        dump = json.load(f)
    xss_dump = os.path.join(a.out, "xss.json")
    dump["config"]["tokens"] = [probe, "</script><script>window.__xss=2</script>", "<b>bold</b>", "a&amp;b", "猫",
                                "the", "sat", "."]
    with open(xss_dump, "w") as f:
        json.dump(dump, f)
    xss_html = os.path.join(a.out, "xss.html")
    attn(a.attn, "view", xss_dump, "--html", xss_html)
    zh_html = os.path.join(a.out, "zh.html")
    attn(a.attn, "view", xss_dump, "--html", zh_html, "--lang", "zh")
    minilm_dump, minilm_html = os.path.join(a.out, "model-6x12.json"), os.path.join(a.out, "model-6x12.html")
    words = ["[CLS]"] + [f"w{k}" for k in range(126)] + ["[SEP]"]
    model_dump(minilm_dump, 6, 12, 128, words, 5)
    attn(a.attn, "view", minilm_dump, "--html", minilm_html)
    train_html, decode_html = os.path.join(a.out, "train.html"), os.path.join(a.out, "decode.html")
    attn(a.attn, "train", "--task", "reverse", "--steps", "150", "--layers", "2", "--seed", "1", "-q", "--html", train_html)
    attn(a.attn, "decode", "--steps", "12", "--layers", "2", "--heads", "4", "--html", decode_html)
    # two batch rows with different padding: the page's batch selector
    batch_html, batch_dump = os.path.join(a.out, "batch.html"), os.path.join(a.out, "batch.json")
    attn(a.attn, "forward", "--seq", "6", "--heads", "2", "--d-model", "16", "--batch", "2", "--mask", "pad:6,3",
         "--seed", "1", "--dump", batch_dump, "--html", batch_html)
    pages = [(fwd_html, "forward"), (batch_html, "batch"), (xss_html, "xss"), (zh_html, "zh"), (minilm_html, "6x12 T=128"),
             (train_html, "train"), (decode_html, "decode")]
    # BERT-base's size: 12 layers x 12 heads at T = 512 (a 50 MB page), from a synthetic dump
    big_dump, big = os.path.join(a.out, "big-12x12-T512.safetensors"), os.path.join(a.out, "big-12x12-T512.html")
    big_rows = synthetic_safetensors(big_dump, 12, 12, 512, 7)
    attn(a.attn, "view", big_dump, "--html", big)
    os.remove(big_dump)
    pages.append((big, "12x12 T=512"))

    # the real model, when it was fetched (scripts/fetch-model.sh): the sentence, all 6 x 12 heads
    model_dir = a.model or os.environ.get("ATTN_MODEL_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "models", "all-MiniLM-L6-v2")
    minilm_real = os.path.join(a.out, "minilm.html")
    if os.path.isfile(os.path.join(model_dir, "model.safetensors")):
        attn(a.attn, "model", "attention", "--model", model_dir, "--text", SENTENCE, "--html", minilm_real)
        pages.append((minilm_real, "MiniLM"))
    else:
        print(f"  SKIP  MiniLM: no model in {model_dir} (bash scripts/fetch-model.sh fetches it)")

    tour_html = os.path.join(a.out, "tour.html")
    if a.tour_to > 0:
        attn(a.attn, "tour", "--from", str(a.tour_from), "--to", str(a.tour_to), "--html", tour_html)

    try:
        b = Browser(chromium, a.out)
    except Exception as e:  # a browser that cannot start here is a skip, said loudly
        print(f"SKIPPED: {chromium} did not start: {e}")
        return SKIP
    try:
        for path, name in pages:
            fig = load_page(b, checks, path, name, a.out)
            figures.append(fig)
            stem = os.path.splitext(os.path.basename(path))[0]
            b.screenshot(os.path.join(a.out, stem + "-first.png"))
            if name == "forward":
                # the head view, hovering query 5: its row alone
                b.eval("document.querySelector('button[data-view=head]').click()")
                x, y = b.eval("(function(){var r=document.querySelectorAll('.col.q .tok')[5].getBoundingClientRect();"
                              "return [r.left+r.width/2, r.top+r.height/2];})()")
                b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
                b.pump(0.1)
                masked = b.eval("document.querySelectorAll('.col.k .tok.masked').length")
                checks.check(masked == 2, f"forward: hovering query 5 strikes through the 2 keys it may not see ({masked})")
                b.screenshot(os.path.join(a.out, stem + "-head.png"))
                # every head of the layer overlaid, a colour each, and the legend shows one alone
                drawn = b.eval("document.querySelector('.hv canvas').dataset.heads")
                n_legend = b.eval("document.querySelectorAll('#hv-legend button').length")
                b.eval("document.querySelector('#hv-legend button[data-head=\"2\"]').click()")
                alone = b.eval("document.querySelector('.hv canvas').dataset.heads")
                checks.check(drawn == "0,1,2,3" and n_legend == 5 and alone == "2",
                             f"forward: the head view overlays heads {drawn} with a legend of {n_legend}; "
                             f"a click shows head {alone} alone")
                b.eval("document.querySelector('#hv-legend button[data-head=\"-1\"]').click()")
                b.eval("document.dispatchEvent(new Event('mousemove'))")
                b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 1, "y": 1})
                b.pump(0.1)
                b.screenshot(os.path.join(a.out, stem + "-heads-overlaid.png"))
                # the matrix view: the hover shows the dump's weight
                b.eval("document.querySelector('button[data-view=matrix]').click()")
                b.pump(0.05)
                w = dump["tensors"]["weights"]["data"]
                maxerr = b.eval("JSON.parse(document.getElementById('attn-data').textContent).maxerr")
                for (i, j) in ((3, 1), (7, 7), (6, 2)):
                    got_i, got_j, got_w, text = hover_cell(b, i, j)
                    want = w[(0 * 8 + i) * 8 + j]  # head 0
                    checks.check(got_i == str(i) and got_j == str(j) and abs(got_w - want) <= maxerr + 1e-7,
                                 f"forward: hover on ({i}, {j}) shows weight {got_w:.6f}, the dump has {want:.6f}")
                got = hover_cell(b, 1, 5)
                checks.check("masked" in got[3], f"forward: hover on a masked cell says so: {got[3]!r}")
                b.eval("(function(){var s=document.getElementById('sel-scale');s.value='log';"
                       "s.dispatchEvent(new Event('change'));})()")
                hover_cell(b, 4, 2)
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
            if name == "batch":
                batch_checks(b, checks, batch_dump, a.out)
            if name == "xss":
                inert = b.eval("typeof window.__xss === 'undefined' && document.querySelectorAll('img, b, iframe').length === 0")
                shown = b.eval("Array.prototype.some.call(document.querySelectorAll('.tok'), "
                               f"function(e){{return e.textContent === {json.dumps(probe)};}})")
                checks.check(inert, "xss: the markup tokens ran nothing and made no element")
                checks.check(shown, "xss: the token shows as its characters")
                b.eval("document.querySelector('button[data-view=head]').click()")
                b.screenshot(os.path.join(a.out, stem + "-head.png"))
                # every head of the layer overlaid, a colour each, and the legend shows one alone
                drawn = b.eval("document.querySelector('.hv canvas').dataset.heads")
                n_legend = b.eval("document.querySelectorAll('#hv-legend button').length")
                b.eval("document.querySelector('#hv-legend button[data-head=\"2\"]').click()")
                alone = b.eval("document.querySelector('.hv canvas').dataset.heads")
                checks.check(drawn == "0,1,2,3" and n_legend == 5 and alone == "2",
                             f"forward: the head view overlays heads {drawn} with a legend of {n_legend}; "
                             f"a click shows head {alone} alone")
                b.eval("document.querySelector('#hv-legend button[data-head=\"-1\"]').click()")
                b.eval("document.dispatchEvent(new Event('mousemove'))")
                b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 1, "y": 1})
                b.pump(0.1)
                b.screenshot(os.path.join(a.out, stem + "-heads-overlaid.png"))
            if name == "zh":
                tab = b.eval("document.querySelector('button[data-view=head]').textContent")
                checks.check(tab == "头视图", f"zh: the head view's tab reads {tab!r}")
                b.eval("document.querySelector('button[data-view=matrix]').click()")
                hover_cell(b, 2, 1)
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
            if name in ("train", "decode"):
                b.eval("document.querySelector('figure.th[data-layer=\"1\"][data-head=\"0\"]').click()")
                b.pump(0.05)
                got = hover_cell(b, 3, 2)
                checks.check(got[0] == "3" and got[2] > 0, f"{name}: layer 1 head 0, hover on (3, 2): {got[3]!r}")
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
            if name == "MiniLM":
                checks.check(fig["heads"] == 72 and fig["bytes"] < 2_000_000,
                             f"MiniLM: {fig['heads']} heads in {fig['bytes']} bytes (6 x 12, under 2 MB)")
                toks = b.eval("JSON.parse(document.getElementById('attn-data').textContent).q")
                checks.check(toks[0] == "[CLS]" and "animal" in toks and toks[-1] == "[SEP]",
                             f"MiniLM: the tokens are the sentence's ({' '.join(toks)})")
                b.eval("document.querySelector('figure.th[data-layer=\"2\"][data-head=\"3\"]').click()")
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
                b.eval("document.querySelector('button[data-view=head]').click()")
                it = toks.index("it")
                x, y = b.eval(f"(function(){{var r=document.querySelectorAll('.col.q .tok')[{it}].getBoundingClientRect();"
                              "return [r.left+r.width/2, r.top+r.height/2];})()")
                b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
                b.pump(0.1)
                hot = b.eval("document.querySelector('.col.q .tok.hot').textContent")
                checks.check(hot == "it", f"MiniLM: hovering 'it' in the head view isolates its row ({hot!r})")
                b.screenshot(os.path.join(a.out, stem + "-head.png"), full=False)
            if name == "12x12 T=512":
                again = load_page(b, checks, path, name + " (again)", a.out)
                fig["open_ms"] = min(fig["open_ms"], again["open_ms"])
                checks.check(fig["open_ms"] < a.open_limit_ms,
                             f"12x12 T=512: drawn {fig['open_ms']} ms after navigation, under {a.open_limit_ms:.0f} ms")
                # the heads' data follows the script: wait for the parser to reach the end, then enlarge a head
                deadline = time.time() + 30
                while not b.eval("'parsedMs' in document.body.dataset") and time.time() < deadline:
                    b.pump(0.05)
                fig["parsed_ms"] = round(b.eval("Number(document.body.dataset.parsedMs)"), 1)
                t0 = b.eval("performance.now()")
                b.eval("document.querySelector('figure.th[data-layer=\"11\"][data-head=\"10\"]').click()")
                fig["enlarge_ms"] = round(b.eval("performance.now()") - t0, 1)
                maxerr = b.eval("JSON.parse(document.getElementById('attn-data').textContent).maxerr")
                for (i, j) in ((0, 0), (300, 17), (511, 510)):
                    got_i, got_j, got_w, _ = hover_cell(b, i, j)
                    want = big_rows[11 * 12 + 10][(j - i) % 512]
                    checks.check(got_i == str(i) and got_j == str(j) and abs(got_w - want) <= maxerr + 1e-7,
                                 f"12x12: layer 11 head 10, hover on ({i}, {j}) shows {got_w:.6f}, the dump has {want:.6f}")
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
            if name == "6x12 T=128":
                checks.check(fig["bytes"] < 2_000_000, f"6x12 T=128: {fig['bytes']} bytes, under 2 MB")
                b.eval("document.querySelector('figure.th[data-layer=\"3\"][data-head=\"7\"]').click()")
                b.pump(0.1)
                sel = b.eval("[document.getElementById('sel-layer').value, document.getElementById('sel-head').value, "
                             "document.getElementById('view-matrix').className]")
                checks.check(sel == ["3", "7", "view on"], f"6x12: a click on layer 3 head 7 enlarges it ({sel})")
                b.screenshot(os.path.join(a.out, stem + "-matrix.png"), full=False)
        if a.tour_to > 0:
            b.events.clear()
            b.open_tab()
            b.call("Page.navigate", {"url": "file://" + os.path.abspath(tour_html)})
            b.pump(1.0)
            lessons = a.tour_to - a.tour_from + 1
            n = b.eval("document.querySelectorAll('details.lesson').length")
            checks.check(n == lessons, f"tour: {n} lessons of {lessons}")
            rec = b.eval("JSON.parse(document.getElementById('attn-tour').textContent).lessons.length")
            checks.check(rec == lessons, f"tour: the embedded record holds {rec} lessons")
            errors = [e for e in b.events if e.get("method") in ("Runtime.exceptionThrown",) or
                      (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")]
            reqs = [e for e in b.events if e.get("method") == "Network.requestWillBeSent" and
                    not e["params"]["request"]["url"].startswith("file://")]
            checks.check(not errors, f"tour: no console error or CSP violation {errors[:2] if errors else ''}")
            checks.check(not reqs, "tour: no network request")
            # the lessons' weight heatmaps as interactive views (iframe srcdoc), each drawn
            tour = b.eval("JSON.parse(document.getElementById('attn-tour').textContent)")
            want = sum(1 for les in tour["lessons"] for hm in les.get("heatmaps", {}).values()
                       if all(abs(sum(hm["values"][i * hm["cols"]:(i + 1) * hm["cols"]]) - 1) <= 1e-4 * hm["cols"] or
                              sum(hm["values"][i * hm["cols"]:(i + 1) * hm["cols"]]) == 0 for i in range(hm["rows"])))
            ready = b.eval("Array.prototype.filter.call(document.querySelectorAll('iframe.view'), function(f){"
                           "var d=f.contentDocument;return d&&d.body&&d.body.dataset.ready==='1';}).length")
            checks.check(ready == want and (want > 0 or not a.tour_from <= 7 <= a.tour_to),
                         f"tour: {ready} interactive views drawn, {want} weight heatmaps in the record")
            b.eval("document.querySelectorAll('details.lesson').forEach(function(d){d.open=true;})")
            b.pump(0.5)
            # each view sizes its frame to its content (no fixed 600 px with blank space beneath)
            fits = b.eval("Array.prototype.map.call(document.querySelectorAll('iframe.view'), function(f){"
                          "var d=f.contentDocument.body;return [f.clientHeight, d.offsetTop+d.offsetHeight];})")
            checks.check(fits and all(abs(h - c) <= 8 for h, c in fits),
                         f"tour: every view's frame is as tall as its content ([frame, content] px: {fits})")
            b.screenshot(os.path.join(a.out, "tour.png"))
            figures.append({"page": "tour.html", "bytes": os.path.getsize(tour_html), "heads": 0, "open_ms": 0, "wall_s": 0})
    finally:
        b.close()
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"chromium": chromium, "pages": figures, "failed": checks.failed}, f, indent=1)
    for fig in figures:
        print(f"  {fig['page']}: {fig['bytes'] / 1e6:.2f} MB, {fig['heads']} heads, drawn in {fig['open_ms']} ms"
              + (f", all heads loaded at {fig['parsed_ms']} ms, one enlarged in {fig['enlarge_ms']} ms"
                 if "enlarge_ms" in fig else ""))
    print("browser test: " + ("all checks passed" if checks.failed == 0 else f"{checks.failed} check(s) FAILED"))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
