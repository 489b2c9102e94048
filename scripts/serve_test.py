#!/usr/bin/env python3
"""Runs `attn serve` and checks it from outside, as a browser and an attacker would.

  scripts/serve_test.py --attn build/attn --out DIR [--http-only] [--chromium PATH]

HTTP (standard library only): every page answers with its Content-Security-Policy;
a foreign Host header is refused (403); a size out of bounds is a 400 naming the
field, a body or a text too long a 413; a full queue a 503; a second training run a
503; the playground's numbers equal `attn forward --dump -` for the command it
names, float for float; the sqrt(Dk) page's equal `attn variance --json`; SIGTERM
stops the server within seconds, training run included.

Browser (Debian's Chromium over the DevTools protocol, as scripts/browser_test.py):
each page loads with no console error and no request to any other origin, a knob
move redraws with the library's weights (those of `attn forward` for the new
settings), a hover shows the weight of its cell, the XSS probe in a sentence stays
text, the zh UI; a PNG screenshot of each page lands in DIR.

Exit 0 when every check passes, 1 when one fails; with no Chromium the browser part
exits 77 (skipped) after the HTTP part passed.
"""
import argparse
import http.client
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_test import SKIP, Browser, Checks, find_chromium, page_errors  # noqa: E402


def f32(x):
    """x rounded to float32, as attn holds it."""
    return struct.unpack("f", struct.pack("f", x))[0]


class Server:
    def __init__(self, binary, *args):
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "http://127.0.0.1:" not in line:
            raise RuntimeError(f"attn serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        self.base = f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, host=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Host": host or f"127.0.0.1:{self.port}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def api(self, path, body):
        status, _, data = self.request("POST", path, body)
        return status, json.loads(data)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        t0 = time.time()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None, time.time() - t0
        return rc, time.time() - t0


def attn_json(binary, args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"attn {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def forward_weights(binary, command):
    """The weights [H][T][T] of batch row 0 that `command` (an `attn forward ... --dump -`) writes."""
    d = attn_json(binary, command.split()[1:])
    w = d["tensors"]["weights"]
    _, H, T, Tk = w["shape"]
    data = w["data"]
    return [[[data[(h * T + i) * Tk + j] for j in range(Tk)] for i in range(T)] for h in range(H)]


def same_floats(a, b):
    fa = [f32(x) for h in a for r in h for x in r]
    fb = [f32(x) for h in b for r in h for x in r]
    return len(fa) == len(fb) and fa == fb


def http_checks(binary, checks):
    s = Server(binary)
    try:
        for page in ("/", "/playground", "/sqrt-dk", "/sentence", "/train", "/playground?lang=zh"):
            status, headers, body = s.request("GET", page)
            csp = headers.get("Content-Security-Policy", "")
            checks.check(status == 200 and "default-src 'none'" in csp and "script-src 'self'" in csp,
                         f"GET {page}: 200 with its Content-Security-Policy")
        status, headers, _ = s.request("GET", "/static/lab.js")
        checks.check(status == 200 and headers.get("X-Content-Type-Options") == "nosniff", "the script: 200, nosniff")
        for host in ("evil.example", f"evil.example:{s.port}", f"127.0.0.1.evil.example:{s.port}", "localhost:1"):
            status, _, body = s.request("GET", "/", host=host)
            checks.check(status == 403 and json.loads(body)["field"] == "Host", f"Host: {host}: refused (403)")
        status, _, _ = s.request("GET", "/", host=f"localhost:{s.port}")
        checks.check(status == 200, "Host: localhost:PORT: served")
        status, _, body = s.request("GET", "/../../etc/passwd")
        checks.check(status == 404 and b"root:" not in body, "a path outside the pages: 404, no file read")

        # ---- refusals name the field
        for body, field, code in (({"seq": 65}, "seq", 400), ({"d_k": 0}, "d_k", 400), ({"heads": 9}, "heads", 400),
                                  ({"mask": "diagonal"}, "mask", 400), ({"temperature": 0}, "temperature", 400),
                                  ({"seed": -1}, "seed", 400), ({"heds": 2}, "heds", 400), ("{not json", "body", 400),
                                  ("[1, 2]", "", 400), ("x" * 20000, "body", 413)):
            status, j = s.api("/api/attention", body)
            checks.check(status == code and j.get("field") == field and j.get("error"),
                         f"POST /api/attention {str(body)[:30]}: {code}, field '{field}' ({j.get('error', '')[:60]})")
        status, j = s.api("/api/sqrt-dk", {"d_k": 5000})
        checks.check(status == 400 and j["field"] == "d_k", f"POST /api/sqrt-dk d_k 5000: 400 ({j['error']})")
        status, _, body = s.request("GET", "/sentence/view?text=" + urllib.parse.quote("a" * 700))
        checks.check(status == 413 and json.loads(body)["field"] == "text", "a 700-byte sentence: 413, field 'text'")
        status, _, body = s.request("GET", "/api/train?steps=5000")
        checks.check(status == 400 and json.loads(body)["field"] == "steps", "a training run of 5000 steps: 400, field 'steps'")

        # ---- the playground computes what `attn forward` computes
        for req in ({}, {"seq": 12, "d_k": 5, "heads": 3, "mask": "window", "window": 4, "temperature": 0.37, "seed": 7},
                    {"seq": 9, "d_k": 16, "heads": 1, "mask": "padding", "keep": 5, "scale": "cosine", "tau": 0.3,
                     "temperature": 1.7, "seed": 3},
                    {"seq": 6, "d_k": 4, "heads": 2, "scale": "inv_dk", "mask": "causal"}):
            status, r = s.api("/api/attention", req)
            ok = status == 200 and same_floats(r["weights"], forward_weights(binary, r["command"]))
            checks.check(ok, f"playground {req}: weights equal `{r.get('command', '?')}` float for float")
        status, r = s.api("/api/attention", {"seq": 5, "heads": 2, "d_k": 3})
        names = [x["name"] for x in r["shapes"]]
        checks.check(names[:5] == ["x", "Q", "K", "V", "Q_heads"] and r["shapes"][0]["shape"] == "[1, 5, 6]",
                     f"playground: the shapes in the forward pass's order ({', '.join(names[:6])}, ...)")

        # ---- the sqrt(Dk) page runs the variance experiment
        status, r = s.api("/api/sqrt-dk", {"d_k": 256, "seed": 4})
        v = attn_json(binary, r["command"].split()[1:] + ["--json"])
        ok = status == 200 and [x["std"] for x in r["rows"]] == [x["std"] for x in v["rows"]]
        checks.check(ok, f"sqrt-dk 256: the stds equal `{r['command']} --json` ({r['rows'][0]['std']:.3f}, "
                         f"{r['rows'][1]['std']:.4f})")

        # ---- one computation at a time, a short queue, 503 beyond
        results = []

        def heavy():
            results.append(s.api("/api/sqrt-dk", {"d_k": 4096})[0])
        threads = [threading.Thread(target=heavy) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        checks.check(503 in results and set(results) <= {200, 503},
                     f"8 heavy requests at once: {results.count(200)} computed, {results.count(503)} answered 503")

        # ---- one training run at a time; closing its stream cancels it
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("GET", "/api/train?task=reverse&steps=2000", headers={"Host": f"127.0.0.1:{s.port}"})
        r1 = c.getresponse()
        first = r1.readline()
        status, _, body = s.request("GET", "/api/train?task=copy&steps=10")
        checks.check(r1.status == 200 and first.startswith(b"data: ") and status == 503,
                     "a second training run while one streams: 503")
        c.close()
        ok = False
        for _ in range(40):
            time.sleep(0.25)
            status, _, body = s.request("GET", "/api/train?task=copy&steps=5&seed=1")
            if status == 200:
                ok = True
                break
        checks.check(ok, "closing the stream cancels the run: a new one starts")
        events = [json.loads(x[6:]) for x in body.decode().split("\n") if x.startswith("data: ")]
        checks.check(events and events[0]["event"] == "start" and events[-1]["event"] == "done" and
                     events[-1]["steps_done"] == 5, f"a run streams start, progress and done ({len(events)} events)")
        status, _, body = s.request("GET", "/api/train?task=reverse&steps=40&seed=2")
        done = [json.loads(x[6:]) for x in body.decode().split("\n") if x.startswith("data: ")][-1]
        t = attn_json(binary, ["train", "--task", "reverse", "--steps", "40", "--seed", "2", "--quiet", "--json"])
        ref = t["result"]["final"]["loss"]
        checks.check(ref is not None and abs(done["eval"]["loss"] - ref) < 1e-9,
                     f"the lab's run equals `attn train --task reverse --steps 40 --seed 2` (eval loss "
                     f"{done['eval']['loss']:.6f} vs {ref})")

        # ---- SIGTERM during a training run
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("GET", "/api/train?task=reverse&steps=2000", headers={"Host": f"127.0.0.1:{s.port}"})
        c.getresponse().readline()
    finally:
        rc, secs = s.stop()
    checks.check(rc == 0 and secs < 5, f"SIGTERM during a training run: exit {rc} in {secs:.2f} s")


def wait_ready(b, serial_before=None, seconds=20):
    t0 = time.time()
    while time.time() - t0 < seconds:
        b.pump(0.05)
        ready = b.eval("document.body.dataset.ready || ''")
        if ready and ready != serial_before:
            return True
    return False


def open_page(b, s, path, name, checks):
    b.events.clear()
    b.open_tab()
    t0 = time.time()
    b.call("Page.navigate", {"url": s.base + path})
    ready = wait_ready(b)
    ms = (time.time() - t0) * 1000
    b.pump(0.3)
    errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
    checks.check(ready, f"{name}: drawn ({ms:.0f} ms from navigation)")
    checks.check(not errors, f"{name}: no console error or CSP violation" + (f": {errors[:3]}" if errors else ""))
    checks.check(not foreign, f"{name}: no request to another origin" + (f": {foreign[:3]}" if foreign else ""))
    return ms


def set_knob(b, knob, value):
    before = b.eval("document.body.dataset.ready || ''")
    b.eval(f"""(function(){{var e=document.getElementById({json.dumps(knob)}); e.value={json.dumps(str(value))};
              e.dispatchEvent(new Event('input', {{bubbles: true}}));}})()""")
    return wait_ready(b, before)


def hover(b, canvas_id, i, j):
    x, y = b.eval(f"""(function(){{var c=document.getElementById({json.dumps(canvas_id)}); c.scrollIntoView();
        var r=c.getBoundingClientRect(), s=+c.dataset.cell;
        return [r.left+(+c.dataset.left)+({j}+0.5)*s, r.top+(+c.dataset.top)+({i}+0.5)*s];}})()""")
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    b.pump(0.1)
    return b.eval("document.getElementById('tip').textContent")


def browser_checks(binary, chromium, out, checks):
    s = Server(binary)
    b = Browser(chromium, out)
    figures = {}
    try:
        figures["playground_ms"] = open_page(b, s, "/playground", "playground", checks)
        for knob, value in (("seq", 10), ("heads", 3), ("mask", "causal"), ("temperature", -1)):
            checks.check(set_knob(b, knob, value), f"playground: moving {knob} to {value} redraws")
        r = b.eval("window.attnLab.attention")
        cfg = r["config"]
        ok = cfg["seq"] == 10 and cfg["heads"] == 3 and cfg["mask"] == "causal" and abs(cfg["temperature"] - 0.5) < 1e-9
        checks.check(ok and same_floats(r["weights"], forward_weights(binary, r["command"])),
                     f"playground: the page's weights after the knob moves equal `{r['command']}`")
        text = hover(b, "weights", 6, 2)
        w = r["weights"][0][6][2]
        checks.check(f"{w:.4f}" in text, f"playground: hovering weights[6, 2] shows {w:.4f} ({text.splitlines()[-1]})")
        text = hover(b, "weights", 2, 6)
        checks.check("−∞" in text, "playground: a masked cell says so on hover")
        b.screenshot(os.path.join(out, "serve-playground.png"))

        figures["sqrt_dk_ms"] = open_page(b, s, "/sqrt-dk", "sqrt-dk", checks)
        checks.check(set_knob(b, "dk", 10), "sqrt-dk: moving Dk to 1024 redraws")
        r = b.eval("window.attnLab.sqrtDk")
        checks.check(r["config"]["d_k"] == 1024 and r["rows"][0]["onehot_fraction"] > r["rows"][1]["onehot_fraction"],
                     f"sqrt-dk: at Dk 1024 unscaled rows are one-hot {100 * r['rows'][0]['onehot_fraction']:.0f}% of the "
                     f"time, scaled {100 * r['rows'][1]['onehot_fraction']:.0f}%")
        b.screenshot(os.path.join(out, "serve-sqrt-dk.png"))

        figures["train_ms"] = open_page(b, s, "/train?lang=zh", "train (zh)", checks)
        checks.check(b.eval("document.getElementById('start').textContent") == "开始训练", "train: the zh UI")
        b.eval("document.getElementById('steps').value='120'; document.getElementById('start').click()")
        t0 = time.time()
        done = False
        while time.time() - t0 < 60 and not done:
            b.pump(0.2)
            done = b.eval("(window.attnLab.train||[]).some(function(e){return e.event==='done'})")
        n = b.eval("(window.attnLab.train||[]).length")
        checks.check(done and n > 10, f"train: 120 steps streamed to the page ({n} events, {time.time() - t0:.1f} s)")
        b.screenshot(os.path.join(out, "serve-train.png"))

        probe = "<img src=x onerror=window.__xss=1></script><script>window.__xss=2</script>"
        b.events.clear()
        b.open_tab()
        b.call("Page.navigate", {"url": s.base + "/sentence"})
        b.pump(1.0)
        has_model = b.eval("document.getElementById('view') !== null")
        b.eval(f"document.getElementById('text').value={json.dumps(probe)}; document.getElementById('go').click()")
        b.pump(3.0)
        errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
        frame_text = b.eval("(function(){try{var d=document.getElementById('view').contentDocument;"
                            "return d.body.innerText}catch(e){return ''}})()") or ""
        xss = b.eval("(function(){var f=document.getElementById('view').contentWindow;"
                     "return [window.__xss||0, (f&&f.__xss)||0]})()")
        checks.check(has_model and xss == [0, 0], f"sentence: the XSS probe stays text (flags {xss})")
        checks.check(not foreign, "sentence: no request to another origin")
        if "attn-lab-error" in frame_text or "fetch it" in frame_text:
            print("  skip  sentence: the model is not here (scripts/fetch-model.sh); its page says how to fetch it")
        else:
            heads = b.eval("(function(){var d=document.getElementById('view').contentDocument;"
                           "return d.querySelectorAll('canvas.thumb').length})()")
            checks.check(heads == 72, f"sentence: MiniLM's 6 x 12 heads drawn ({heads})")
            checks.check("<img" in frame_text or "img" in frame_text, "sentence: the probe's tokens shown as text")
        b.screenshot(os.path.join(out, "serve-sentence.png"))
    finally:
        b.close()
        s.stop()
    with open(os.path.join(out, "serve-summary.json"), "w") as f:
        json.dump(figures, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attn", required=True, help="the attn binary")
    ap.add_argument("--out", required=True, help="folder for screenshots and serve-summary.json")
    ap.add_argument("--http-only", action="store_true", help="the HTTP checks only (no browser)")
    ap.add_argument("--browser-only", action="store_true", help="the browser checks only")
    ap.add_argument("--chromium", help="the browser (default: chromium on PATH)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    checks = Checks()
    if not a.browser_only:
        print("attn serve over HTTP:")
        http_checks(a.attn, checks)
    if not a.http_only and checks.failed == 0:
        chromium = find_chromium(a.chromium)
        if chromium is None:
            print("SKIPPED: the browser part (no Chromium; apt-get install chromium)")
            return SKIP
        print("attn serve in headless Chromium:")
        browser_checks(a.attn, chromium, a.out, checks)
    print(f"{checks.failed} check(s) failed" if checks.failed else "every check passed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
