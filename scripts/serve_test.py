#!/usr/bin/env python3
"""Runs `attn serve` and checks it from outside, as a browser and an attacker would.

  scripts/serve_test.py --attn build/attn --out DIR [--http-only] [--exercise-only] [--chromium PATH]

HTTP (standard library only): every page answers with its Content-Security-Policy;
a foreign Host header is refused (403); a size out of bounds is a 400 naming the
field, a body or a text too long a 413; a full queue a 503; a second training run a
503; the playground's numbers equal `attn forward --dump -` for the command it
names, float for float; the sqrt(Dk) page's equal `attn variance --json`; SIGTERM
stops the server within seconds, training run included. Through raw sockets: bytes
that are not UTF-8 and deep JSON are 400s naming the field and leave no lock held;
a foreign Origin is 403, a body that is not JSON 415, a GET of an API 405, and none
computes; 64 slow, 64 idle and 20 half-sent connections leave GET / answering in
under a second and get 408 or a close at their deadlines; oversized headers 431; a
taken --port exits 2; 1,000 random malformed requests get no 5xx and leave a normal
request computed the same in under a second; an exception thrown from inside each
handler (the ATTN_SERVE_TEST_FAULTS hook) is answered and the next request served.
The exercise page's API: its inputs and task are `attn exercise N`'s byte for byte; right
answers of three exercises (made here in plain Python, float32 .npy and float64 .npz) pass, wrong
ones get the diagnosis expected and the very attn-check document of `attn exercise N --check
--json` on the same file; a bad upload (not base64, not .npy/.npz, too big, wrong shape) is a
400 of one line on field answer, and 300 mutated answers get a grade or such a 400, no 5xx.

Browser (Debian's Chromium over the DevTools protocol, as scripts/browser_test.py):
each page loads with no console error and no request to any other origin, a knob
move redraws with the library's weights (those of `attn forward` for the new
settings), a hover shows the weight of its cell, the XSS probe in a sentence stays
text, a sentence too long is refused inside the page (its box takes no more), the
training run streams from a POST and Stop ends it, the zh UI, an answer uploaded
through the exercise page's file input shows the stage table and the diagnosis; a PNG
screenshot of each page lands in DIR.

Exit 0 when every check passes, 1 when one fails; with no Chromium the browser part
exits 77 (skipped) after the HTTP part passed.
"""
import argparse
import ast
import base64
import io
import math
import http.client
import json
import os
import re
import random
import shlex
import signal
import socket
import struct
import subprocess
import sys
import threading
import tempfile
import time
import urllib.parse
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_test import SKIP, Browser, Checks, find_chromium, page_errors  # noqa: E402


def f32(x):
    """x rounded to float32, as attn holds it."""
    return struct.unpack("f", struct.pack("f", x))[0]


class Server:
    def __init__(self, binary, *args, env=None):
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if "http://127.0.0.1:" not in line:
            raise RuntimeError(f"attn serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        self.base = f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, host=None, timeout=60, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Host": host or f"127.0.0.1:{self.port}", **(headers or {})}
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
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

    def api_with(self, path, body, headers):
        status, _, data = self.request("POST", path, body, headers=headers)
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


def train_stream(s, body):
    """A connection whose POST /api/train is sent: read its answer as a stream."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/api/train", body=json.dumps(body),
              headers={"Host": f"127.0.0.1:{s.port}", "Content-Type": "application/json"})
    return c


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


def http_checks(binary, checks, out):
    s = Server(binary)
    try:
        for page in ("/", "/playground", "/sqrt-dk", "/sentence", "/train", "/exercise", "/playground?lang=zh"):
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
        status, j = s.api("/api/sentence", {"text": "a" * 700})
        checks.check(status == 413 and j["field"] == "text", f"a 700-byte sentence: 413, field 'text' ({j['error']})")
        status, j = s.api("/api/train", {"steps": 5000})
        checks.check(status == 400 and j["field"] == "steps", "a training run of 5000 steps: 400, field 'steps'")

        bad_bytes_checks(s, checks)
        decoder_checks(binary, s, checks)
        exercise_checks(binary, s, checks, out)
        cross_site_checks(s, checks)
        slow_client_checks(s, checks)
        fuzz_requests(s, checks)
        port_checks(binary, s, checks)

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
        c = train_stream(s, {"task": "reverse", "steps": 2000})
        r1 = c.getresponse()
        first = r1.readline()
        status, _, body = s.request("POST", "/api/train", {"task": "copy", "steps": 10})
        checks.check(r1.status == 200 and first.startswith(b"data: ") and status == 503,
                     "a second training run while one streams: 503")
        c.close()
        ok = False
        for _ in range(40):
            time.sleep(0.25)
            status, _, body = s.request("POST", "/api/train", {"task": "copy", "steps": 5, "seed": 1})
            if status == 200:
                ok = True
                break
        checks.check(ok, "closing the stream cancels the run: a new one starts")
        events = [json.loads(x[6:]) for x in body.decode().split("\n") if x.startswith("data: ")]
        checks.check(events and events[0]["event"] == "start" and events[-1]["event"] == "done" and
                     events[-1]["steps_done"] == 5, f"a run streams start, progress and done ({len(events)} events)")
        status, _, body = s.request("POST", "/api/train", {"task": "reverse", "steps": 40, "seed": 2})
        done = [json.loads(x[6:]) for x in body.decode().split("\n") if x.startswith("data: ")][-1]
        t = attn_json(binary, ["train", "--task", "reverse", "--steps", "40", "--seed", "2", "--quiet", "--json"])
        ref = t["result"]["final"]["loss"]
        checks.check(ref is not None and abs(done["eval"]["loss"] - ref) < 1e-9,
                     f"the lab's run equals `attn train --task reverse --steps 40 --seed 2` (eval loss "
                     f"{done['eval']['loss']:.6f} vs {ref})")

        # ---- SIGTERM during a training run
        c = train_stream(s, {"task": "reverse", "steps": 2000})
        c.getresponse().readline()
    finally:
        rc, secs = s.stop()
    checks.check(rc == 0 and secs < 5, f"SIGTERM during a training run: exit {rc} in {secs:.2f} s")


def timed(fn):
    t0 = time.time()
    r = fn()
    return r, time.time() - t0


def bad_bytes_checks(s, checks):
    """Bytes that are not UTF-8 in a request: 400 naming the field, no raw byte in the answer,
    and the next computation served at once (no lock left held)."""
    for body, field in ((b'{"s\xe9q": 2}', "s\\xE9q"), (b'{"mask": "\xff"}', "mask"),
                        (b'{"seq": 4, "\xc0\x80": 1}', "\\xC0\\x80")):
        status, _, data = s.request("POST", "/api/attention", body)
        j = json.loads(data)
        checks.check(status == 400 and j.get("field") == field and data.isascii(),
                     f"POST /api/attention {body!r}: 400, field {j.get('field')!r}, answer ASCII ({j.get('error')})")
        (status, _, data), secs = timed(lambda: s.request("POST", "/api/attention", {"seq": 4}, timeout=5))
        checks.check(status == 200 and secs < 1, f"  then a normal /api/attention: {status} in {secs:.2f} s")
    status, _, data = s.request("POST", "/api/train", b'{"task": "\xff"}')
    checks.check(status == 400 and json.loads(data).get("field") == "task" and data.isascii(),
                 f"POST /api/train {{\"task\": \"\\xff\"}}: {status}, field 'task'")
    status, _, data = s.request("GET", "/api/train?task=%ff")
    checks.check(status == 405 and data.isascii(), f"GET /api/train?task=%ff: {status} (a GET starts no work)")
    status, _, data = s.request("POST", "/api/attention", b"[" * 10000)
    j = json.loads(data)
    checks.check(status == 400 and j.get("field") == "body" and "deeper than 64" in j["error"],
                 f"a body nested 10,000 deep: 400 before parsing ({j['error']})")


def decoder_checks(binary, s, checks):
    """/api/decoder's tokens and next-token distribution are `attn model next --json`'s, entry
    for entry, for the command the answer names."""
    for text in ("To be, or not to b", "MACBETH:\nIs this a dagger", "Thou"):
        status, r = s.api("/api/decoder", {"text": text})
        ref = attn_json(binary, shlex.split(r["command"])[1:]) if status == 200 else {}
        ok = status == 200 and r["next"] == ref.get("next") and r["tokens"] == ref.get("tokens")
        top = r["next"][0] if status == 200 else {}
        checks.check(ok, f"decoder {text!r}: tokens and next equal `{r.get('command', '?')}` "
                         f"(top {top.get('text')!r} {100 * top.get('prob', 0):.2f}%)")
    for text, temperature, seed in (("Thou", 0.8, 3), ("To be, or", 0, 0), ("MACBETH", 1.7, 11)):
        status, r = s.api("/api/decoder", {"text": text, "temperature": temperature, "seed": seed})
        sample = r.get("sample") or {}
        ref = attn_json(binary, shlex.split(sample["command"])[1:])["steps"][0] if status == 200 else {}
        ok = status == 200 and {k: sample[k] for k in ("id", "text", "prob")} == ref
        checks.check(ok, f"decoder: the sampled next token is `{sample.get('command', '?')}`'s "
                         f"({sample.get('text')!r}, {100 * sample.get('prob', 0):.2f}%)")
    for heads in ([[0, 0]], [[1, 2], [0, 1]], [[0, 0], [0, 1], [0, 2], [0, 3]]):
        status, r = s.api("/api/decoder", {"text": "To be, or not to b", "ablate": heads})
        a = r.get("ablated") or {}
        ref = attn_json(binary, shlex.split(a["command"])[1:]) if status == 200 else {}
        ok = (status == 200 and a["top"] == ref["ablated"]["top"]
              and a["prob_clean_top"] == ref["ablated"]["prob_clean_top"])
        checks.check(ok, f"decoder: ablating {heads}: the next token is `{a.get('command', '?')}`'s "
                         f"({a.get('top', {}).get('text')!r} {100 * a.get('top', {}).get('prob', 0):.2f}%)")
    status, r = s.api("/api/decoder", {"text": "Thou art so", "temperature": 0.8, "seed": 3})
    gen = attn_json(binary, shlex.split(r["sample"]["command"])[1:] + ["--attention"])["steps"][0]["attention"]
    diff = max(abs(a - b) for la, lb in zip(r["attention"], gen) for ha, hb in zip(la, lb) for a, b in zip(ha, hb))
    shape_ok = [len(r["attention"]), len(r["attention"][0]), len(r["attention"][0][0])] == [len(gen), len(gen[0]),
                                                                                           len(gen[0][0])]
    checks.check(status == 200 and shape_ok and diff < 1e-5,
                 f"decoder: every head's last-query weights equal `{r['sample']['command']} --attention`'s "
                 f"(max |diff| {diff:.1e}, KV-cache vs whole forward)")
    status, r = s.api("/api/decoder", {"text": "To be, or not to b"})
    ref = attn_json(binary, shlex.split(r["command"])[1:])["next"][0]
    last = r["lens"][-1]
    checks.check(len(r["lens"]) == r["layers"] and last["id"] == ref["id"]
                 and abs(last["prob"] - ref["prob"]) < 1e-5,
                 f"decoder: the logit lens after the last layer is the model's prediction ({last['text']!r} "
                 f"{100 * last['prob']:.2f}% vs {100 * ref['prob']:.2f}%); layers: "
                 f"{', '.join(repr(x['text']) for x in r['lens'])}")
    for bad in ([[9, 0]], [[0, 0], [0, 0]], [0, 0], "0.0"):
        status, j = s.api("/api/decoder", {"text": "To be", "ablate": bad})
        checks.check(status == 400 and j["field"] == "ablate", f"decoder: ablate {bad}: 400, field 'ablate'")
    status, j = s.api("/api/decoder", {"text": "é ✓"})
    cli = subprocess.run([binary, "model", "next", "--text", "é ✓"], capture_output=True, text=True)
    checks.check(status == 400 and j["field"] == "text" and cli.returncode == 2
                 and "not in the vocabulary" in j["error"] and "not in the vocabulary" in cli.stderr, f"decoder: a text the vocabulary cannot spell: 400 as "
                 f"the command refuses it ({j['error'][:70]}...)")
    for body, field in (({"text": ""}, "text"), ({"text": "a" * 700}, "text"), ({"text": "a", "top": 0}, "top"),
                        ({"text": "a", "temp": 1}, "temp")):
        status, j = s.api("/api/decoder", body)
        checks.check(status in (400, 413) and j["field"] == field,
                     f"decoder {str(body)[:40]}: {status}, field {field!r}")



# ---- the exercise page: answers made here, in plain Python (an independent implementation)
def npy_bytes(values, shape, descr="<f4"):
    """The bytes np.save writes for a C-order array of `values` (a flat list)."""
    dims = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    fmt = "<%d%s" % (len(values), "f" if descr == "<f4" else "d")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack(fmt, *values)


def npz_bytes(arrays):
    """An .npz (np.savez): a zip of NAME.npy files."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in arrays.items():
            z.writestr(name + ".npy", data)
    return buf.getvalue()


def read_npz(data):
    """{name: (shape, flat float list)} of an .npz of float32 arrays."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in z.namelist():
            b = z.read(name)
            n = struct.unpack("<H", b[8:10])[0]
            h = ast.literal_eval(b[10:10 + n].decode())
            count = 1
            for d in h["shape"]:
                count *= d
            out[name[:-4]] = (list(h["shape"]), list(struct.unpack("<%df" % count, b[10 + n:10 + n + 4 * count])))
    return out


def rows_of(shape_values):
    (r, c), v = shape_values
    return [v[i * c:(i + 1) * c] for i in range(r)]


def softmax(row):
    finite = [x for x in row if x != -math.inf]
    m = max(finite)
    e = [math.exp(x - m) if x != -math.inf else 0.0 for x in row]
    return [x / sum(e) for x in e]


def scaled_scores(inputs, scale=True):
    Q, K = rows_of(inputs["Q"]), rows_of(inputs["K"])
    f = 1 / math.sqrt(len(Q[0])) if scale else 1.0
    return [[sum(a * b for a, b in zip(q, k)) * f for k in K] for q in Q]


def exercise_answers(inputs, number):
    """(the right answer, a wrong one, the id of its mistake) of exercises 1, 2 and 3, as flat lists."""
    if number == 1:
        return scaled_scores(inputs), scaled_scores(inputs, scale=False), "no-scale"
    if number == 2:
        S = rows_of(inputs["scores"])
        # exp without the max subtraction: float64 overflows past 709.78, and inf / inf is NaN
        unstable = [[math.inf if x > 709.78 else math.exp(x) for x in r] for r in S]
        return [softmax(r) for r in S], [[x / sum(r) for x in r] for r in unstable], "unstable-softmax"
    S = scaled_scores(inputs)
    masked = [[x if j <= i else -math.inf for j, x in enumerate(r)] for i, r in enumerate(S)]
    cols = [softmax(list(c)) for c in zip(*masked)]  # softmax down each column: over the queries
    return [softmax(r) for r in masked], [list(r) for r in zip(*cols)], "softmax-query-axis"


def flat(m):
    return [x for r in m for x in r]


def cli_exercise_check(binary, number, seed, path):
    r = subprocess.run([binary, "exercise", str(number), "--seed", str(seed), "--check", path, "--json"],
                       capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout) if r.stdout else None


def exercise_checks(binary, s, checks, out):
    """/api/exercise's inputs and task are `attn exercise N`'s, byte for byte; /api/exercise/check
    grades an answer as `attn exercise N --check` does; a bad upload is a 400 of one line."""
    work = tempfile.mkdtemp(prefix="attn-exercise-", dir=out)
    status, r = s.api("/api/exercise", {})
    checks.check(status == 200 and len(r["exercises"]) == len(attn_json(binary, ["exercise", "--list", "--json"])
                                                              ["exercises"]) and r["exercise"]["number"] == 1,
                 f"exercise: every exercise of `attn exercise --list` offered ({len(r.get('exercises', []))})")
    for number, seed in ((3, 7), ("rope", 2)):
        status, r = s.api("/api/exercise", {"exercise": number, "seed": seed})
        d = os.path.join(work, f"cli-{number}")
        subprocess.run([binary, "exercise", str(number), "--seed", str(seed), "-o", d], capture_output=True, check=True)
        with open(os.path.join(d, "inputs.npz"), "rb") as f, open(os.path.join(d, "task.md")) as g:
            same = status == 200 and base64.b64decode(r["inputs"]) == f.read() and r["task"] == g.read()
        checks.check(same, f"exercise {number} seed {seed}: inputs.npz and task.md are `{r.get('command')}`'s, "
                           f"byte for byte")
    for number, seed, npz in ((1, 5, False), (2, 0, True), (3, 11, False)):
        status, r = s.api("/api/exercise", {"exercise": number, "seed": seed})
        inputs = read_npz(base64.b64decode(r["inputs"]))
        right, wrong, wrong_id = exercise_answers(inputs, number)
        for kind, m in (("right", right), ("wrong", wrong)):
            shape = [len(m), len(m[0])]
            data = npy_bytes(flat(m), shape, "<f8" if npz else "<f4")
            if npz:
                data = npz_bytes({r["exercise"]["answer"]: data})
            path = os.path.join(work, f"answer-{number}-{kind}.{'npz' if npz else 'npy'}")
            with open(path, "wb") as f:
                f.write(data)
            status, j = s.api("/api/exercise/check", {"exercise": number, "seed": seed,
                                                      "answer": base64.b64encode(data).decode()})
            rc, cli = cli_exercise_check(binary, number, seed, path)
            ids = [x["id"] for x in j.get("check", {}).get("diagnosis", [])]
            if kind == "right":
                ok = status == 200 and j["pass"] and rc == 0 and j["check"] == cli
                checks.check(ok, f"exercise {number}: a right answer ({'float64 .npz' if npz else 'float32 .npy'}) "
                                 f"passes, as `{j.get('command')}` says")
            else:
                ok = status == 200 and not j["pass"] and rc == 3 and j["check"] == cli and ids == [wrong_id]
                first = j.get("check", {}).get("first_divergence")
                checks.check(ok, f"exercise {number}: a wrong answer fails at {first!r} with diagnosis {ids} "
                                 f"(expected [{wrong_id!r}]), the command's check (exit {rc})")
    one = npy_bytes([0.0] * 30, [6, 5])
    big = npy_bytes([0.0] * 2100, [2100])
    for what, body, field in (
            ("not npz", {"exercise": 1, "answer": base64.b64encode(b"hello, not a numpy file").decode()}, "answer"),
            ("not base64", {"exercise": 1, "answer": "@@@@"}, "answer"),
            ("too big", {"exercise": 1, "answer": base64.b64encode(big).decode()}, "answer"),
            ("wrong shape", {"exercise": 1, "answer": base64.b64encode(one).decode()}, "answer"),
            ("a broken npz", {"exercise": 1, "answer": base64.b64encode(b"PK\x03\x04junk").decode()}, "answer"),
            ("no exercise 13", {"exercise": 13, "answer": base64.b64encode(one).decode()}, "exercise"),
            ("an unknown field", {"exercise": 1, "answr": ""}, "answr"),
            ("a negative seed", {"exercise": 1, "seed": -1, "answer": ""}, "seed")):
        status, j = s.api("/api/exercise/check", body)
        err = j.get("error", "")
        checks.check(status == 400 and j.get("field") == field and err and "\n" not in err,
                     f"exercise check, {what}: 400 of one line, field {field!r} ({err[:90]})")
    status, j = s.api("/api/exercise/check", {"exercise": 1, "answer": "A" * 20000})
    checks.check(status == 413 and "16384" in j.get("error", ""),
                 f"exercise check past the body limit: 413 ({j.get('error')})")
    status, _, _ = s.request("GET", "/api/exercise")
    checks.check(status == 405, "GET /api/exercise: 405, no work")
    # Mutated answers (bytes flipped, cut, grown in a valid .npy and .npz): a grade or a 400, never a 5xx.
    rng = random.Random(3)
    seeds = [npy_bytes([0.5] * 36, [6, 6]), npz_bytes({"scores_scaled": npy_bytes([0.5] * 36, [6, 6], "<f8")})]
    statuses = {}
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            op, at = rng.random(), rng.randrange(len(data))
            if op < 0.6:
                data[at] = rng.randrange(256)
            elif op < 0.8:
                del data[at:]
                if not data:
                    data = bytearray(b"\x93")
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        status, j = s.api("/api/exercise/check", {"exercise": 1, "answer": base64.b64encode(bytes(data)).decode()})
        ok_answer = status == 200 or (status == 400 and j.get("field") == "answer" and "\n" not in j.get("error", ""))
        key = status if ok_answer else f"bad {status}"
        statuses[key] = statuses.get(key, 0) + 1
    checks.check(set(statuses) <= {200, 400}, f"300 mutated answers: graded or refused on field 'answer', no 5xx "
                                              f"({statuses})")


def cross_site_checks(s, checks):
    """Only the lab's own pages make it compute: a foreign Origin is 403, a body that is not
    JSON 415, a GET 405, and none of them starts anything (a training run then starts at once)."""
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{s.port}.evil.example", "http://localhost:1",
                   f"https://127.0.0.1:{s.port}"):
        for path, body in (("/api/attention", {"seq": 4}), ("/api/train", {"steps": 2000})):
            status, _, data = s.request("POST", path, body, headers={"Origin": origin})
            j = json.loads(data)
            checks.check(status == 403 and j["field"] == "Origin" and "\n" not in j["error"],
                         f"POST {path} with Origin: {origin}: 403 ({j['error'][:70]}...)")
    for ct in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        status, _, data = s.request("POST", "/api/train", json.dumps({"steps": 2000}), headers={"Content-Type": ct})
        j = json.loads(data)
        checks.check(status == 415 and j["field"] == "Content-Type", f"POST /api/train as {ct!r}: 415 ({j['error']})")
    for path in ("/api/train?task=reverse&steps=2000", "/api/attention?seq=4", "/sentence/view?text=hi"):
        status, headers, data = s.request("GET", path)
        checks.check(status == 405 and headers.get("Allow") == "POST", f"GET {path}: 405, Allow: POST")
    status, _, body = s.request("POST", "/api/train", {"steps": 2}, timeout=10)
    checks.check(status == 200 and b'"done"' in body,
                 "after them a training run starts at once: none of them started one")
    for own in (f"http://127.0.0.1:{s.port}", f"http://localhost:{s.port}"):
        status, _ = s.api_with("/api/attention", {"seq": 4}, {"Origin": own})
        checks.check(status == 200, f"Origin: {own}: computed")
    status, _ = s.api_with("/api/attention", {"seq": 4}, {"Content-Type": "Application/JSON; charset=utf-8"})
    checks.check(status == 200, "Content-Type: Application/JSON; charset=utf-8: computed")
    for path, body in (("/api/train", {"steps": 2, "bogus": 1}), ("/api/sentence", {"text": "hi", "bogus": 1}),
                       ("/api/sqrt-dk", {"bogus": 1}), ("/api/attention", {"bogus": 1})):
        status, j = s.api(path, body)
        checks.check(status == 400 and j["field"] == "bogus", f"POST {path} with an unknown field: 400, field 'bogus'")
    # The body limit: one number in the code's answer and in the docs.
    status, j = s.api("/api/attention", '{"seq": 4}' + " " * 20000)
    limit = re.search(r"at most (\d+) bytes", j["error"])
    docs = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "commands", "serve.md")).read()
    checks.check(status == 413 and limit and f"over {limit.group(1)} bytes" in docs,
                 f"a 20 KB body: 413, and the limit it names ({limit.group(1) if limit else '?'} bytes) is the docs'")
    n = int(limit.group(1)) if limit else 0
    status, _ = s.api("/api/attention", '{"seq": 4}' + " " * (n - 10))
    checks.check(status == 200, f"a body of exactly {n} bytes: computed")


def fault_checks(binary, checks):
    """An exception thrown from inside each handler (the test hook ATTN_SERVE_TEST_FAULTS) is
    answered, and releases what the handler held: the same request then succeeds at once."""
    s = Server(binary, env={**os.environ, "ATTN_SERVE_TEST_FAULTS": "1"})
    try:
        for method, path, body in (("GET", "/", None), ("GET", "/static/lab.js", None),
                                   ("POST", "/api/attention", {"seq": 4}), ("POST", "/api/sqrt-dk", {"d_k": 4}),
                                   ("POST", "/api/sentence", {"text": "hi"}), ("POST", "/api/train", {"steps": 3})):
            for kind in ("runtime", "json", "alloc", "other"):
                status, _, data = s.request(method, path, body, headers={"X-Attn-Test-Fault": kind}, timeout=5)
                j = json.loads(data)
                ok = status in (500, 503) and j.get("format") == "attn-lab-error" and data.isascii()
                (status2, _, data2), secs = timed(lambda: s.request(method, path, body, timeout=5))
                model_missing = status2 == 404 and b'"model"' in data2
                # (the training run is a whole 3-step run, streamed: its own bound)
                checks.check(ok and (status2 == 200 or model_missing) and secs < (5 if path == "/api/train" else 1),
                             f"{method} {path}: a {kind} fault answers {status}; "
                             f"the next request {status2} in {secs:.2f} s")
    finally:
        s.stop()


def raw_status(port, data, timeout=3):
    """Sends bytes on a fresh connection and returns the answer's status (None: no answer)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            c.sendall(data)
        except OSError:
            pass  # refused mid-way (413, 431): the answer is still there to read
        got = b""
        while b"\r\n" not in got:
            chunk = c.recv(4096)
            if not chunk:
                break
            got += chunk
        return int(got.split(b" ")[1]) if got.startswith(b"HTTP/1.1 ") else None
    except (OSError, ValueError, IndexError):
        return None
    finally:
        c.close()


def slow_client_checks(s, checks):
    """Slow, idle and half-sent requests hold no worker: GET / answers in under a second while
    64 connections send a header byte a second, 64 sit idle and 20 stop halfway through a body;
    each of them is answered 408 or closed at its deadline (5 s)."""
    host = f"127.0.0.1:{s.port}"
    slow, idle, partial = [], [], []
    for _ in range(64):
        slow.append(socket.create_connection(("127.0.0.1", s.port), timeout=3))
        idle.append(socket.create_connection(("127.0.0.1", s.port), timeout=3))
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=3)
        c.sendall(f"POST /api/attention HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: 1000\r\n\r\n{{\"seq\": ".encode())
        partial.append(c)
    line = f"GET / HTTP/1.1\r\nHost: {host}\r\nX-Slow: ".encode()
    worst, codes = 0.0, set()
    for sec in range(3):
        t0 = time.time()
        for c in slow:
            c.send(line[sec:sec + 1])
        (status, _, _), secs = timed(lambda: s.request("GET", "/", timeout=5))
        (status2, _), secs2 = timed(lambda: s.api("/api/attention", {"seq": 4}))
        worst, codes = max(worst, secs, secs2), codes | {status, status2}
        time.sleep(max(0.0, 1 - (time.time() - t0)))
    checks.check(codes == {200} and worst < 1,
                 f"64 connections sending a header byte a second, 64 idle, 20 half-sent bodies: GET / and "
                 f"/api/attention answer in {worst:.3f} s at worst")
    time.sleep(3.5)  # past the 5 s deadlines

    def answer(c):
        try:
            return c.recv(4096)
        except OSError:
            return b"(no answer)"
    slow_answers = [answer(c) for c in slow]
    idle_answers = [answer(c) for c in idle]
    partial_answers = [answer(c) for c in partial]
    for c in slow + idle + partial:
        c.close()
    checks.check(all(a.startswith(b"HTTP/1.1 408") for a in slow_answers),
                 "headers still coming after 5 s: 408, connection closed")
    checks.check(all(a == b"" for a in idle_answers), "a connection idle for 5 s: closed")
    checks.check(all(a.startswith(b"HTTP/1.1 408") for a in partial_answers),
                 "a body still coming 5 s after its headers: 408, connection closed")
    big = f"GET / HTTP/1.1\r\nHost: {host}\r\n".encode() + b"".join(
        f"X-Big-{i}: {'a' * 8000}\r\n".encode() for i in range(3)) + b"\r\n"
    checks.check(raw_status(s.port, big) == 431, "20 KB of headers: 431")
    many = f"GET / HTTP/1.1\r\nHost: {host}\r\n".encode() + b"".join(
        f"X-{i}: 1\r\n".encode() for i in range(100)) + b"\r\n"
    checks.check(raw_status(s.port, many) == 431, "100 header lines: 431")
    fine = f"GET / HTTP/1.1\r\nHost: {host}\r\n".encode() + b"".join(
        f"X-{i}: 1\r\n".encode() for i in range(40)) + b"\r\n"
    checks.check(raw_status(s.port, fine) == 200, "40 header lines: 200")


def port_checks(binary, s, checks):
    """A port that is taken, by another attn serve or by any program (even one that allows
    sharing with SO_REUSEPORT), is refused in one line with exit 2: no second listener."""
    def second(port):
        p = subprocess.Popen([binary, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return None, out, err
        return p.returncode, out, err
    holders = []
    o = socket.socket()
    o.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    o.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    o.bind(("127.0.0.1", 0))
    o.listen()
    holders.append(("a program listening with SO_REUSEPORT", o))
    w = socket.socket()
    w.bind(("0.0.0.0", 0))
    w.listen()
    holders.append(("a program listening on 0.0.0.0", w))
    try:
        for what, port in [("another attn serve", s.port)] + [(x, h.getsockname()[1]) for x, h in holders]:
            rc, out, err = second(port)
            checks.check(rc == 2 and not out and len(err.strip().splitlines()) == 1 and "in use" in err,
                         f"--port {port} held by {what}: exit {rc}, {err.strip()!r}")
    finally:
        for _, h in holders:
            h.close()


def fuzz_requests(s, checks, n=1000, seed=1):
    """n random malformed requests (bad UTF-8, deep JSON, huge or many headers, partial and bad
    bodies, junk): none is answered 5xx, and a normal /api/attention is then computed, the
    same as before them, in under a second."""
    rng = random.Random(seed)
    host = f"127.0.0.1:{s.port}"
    status, ref = s.api("/api/attention", {"seq": 5, "seed": 3})

    def post(body, headers=""):
        return (f"POST /api/attention HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{headers}"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    def bad_utf8():
        b = bytearray(b'{"seq": 4, "mask": "causal"}')
        b[rng.randrange(1, len(b) - 1)] = rng.randrange(0x80, 0x100)
        return post(bytes(b)), True

    def deep():
        return post(rng.choice([b"[", b"{\"a\":"]) * rng.choice([65, 1000, 16000, 100000])), True

    def huge_headers():
        lines = f"X-A: {'b' * 8000}\r\n" * rng.randint(3, 40)
        return (f"GET / HTTP/1.1\r\nHost: {host}\r\n" + lines + "\r\n").encode(), True

    def many_headers():
        return (f"GET / HTTP/1.1\r\nHost: {host}\r\n" + "X-A: 1\r\n" * rng.randint(65, 3000) + "\r\n").encode(), True

    def partial():
        whole = post(json.dumps({"seq": rng.randint(1, 64)}).encode() + b" " * rng.randint(0, 500))
        return whole[:rng.randrange(1, len(whole))], False

    def junk():
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) + b"\r\n\r\n", True

    def bad_length():
        return (f"POST /api/attention HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {rng.choice(['abc', '-1', '1e3', '4, 5', '99999999999999999999'])}\r\n\r\n{{}}"
                ).encode(), True

    def mutated():
        b = bytearray(json.dumps({"seq": rng.randint(1, 64), "heads": rng.randint(1, 8), "mask": "window"}).encode())
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        extra = rng.choice(["", "Origin: http://evil.example\r\n", "Transfer-Encoding: chunked\r\n"])
        return post(bytes(b), extra), True

    kinds = [bad_utf8, deep, huge_headers, many_headers, partial, junk, bad_length, mutated]
    statuses = {}
    t0 = time.time()
    for _ in range(n):
        kind = rng.choice(kinds)
        data, wait = kind()
        if wait:
            code = raw_status(s.port, data)
            statuses.setdefault(kind.__name__, set()).add(code)
        else:
            c = socket.create_connection(("127.0.0.1", s.port), timeout=3)
            c.sendall(data)
            c.close()
    secs_all = time.time() - t0
    server_errors = {k: v for k, v in statuses.items() if any(x is not None and x >= 500 for x in v)}
    unanswered = {k for k, v in statuses.items() if None in v}
    checks.check(not server_errors and not unanswered,
                 f"{n} malformed requests in {secs_all:.1f} s: no 5xx, all answered "
                 f"({', '.join(f'{k} {sorted(x for x in v if x)}' for k, v in sorted(statuses.items()))})")
    (status2, r), secs = timed(lambda: s.api("/api/attention", {"seq": 5, "seed": 3}))
    checks.check(status == 200 and status2 == 200 and r["weights"] == ref["weights"] and secs < 1,
                 f"after them a normal /api/attention: {status2}, the same weights, in {secs:.3f} s")


def wait_ready(b, serial_before=None, seconds=20):
    t0 = time.time()
    while time.time() - t0 < seconds:
        b.pump(0.05)
        ready = b.eval("(document.body && document.body.dataset.ready) || ''")
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



def exercise_browser_checks(binary, b, s, out, checks):
    """The /exercise page: it loads, offers the inputs, and an uploaded answer (through the page's
    own file input) shows the stage table and the diagnosis of `attn exercise N --check`."""
    figures = {"exercise_ms": open_page(b, s, "/exercise", "exercise", checks)}
    r = b.eval("window.attnLab.exercise")
    n_options = b.eval("document.getElementById('exercise').options.length")
    href = b.eval("document.getElementById('download').href")
    task = b.eval("document.getElementById('task').textContent")
    checks.check(n_options == len(r["exercises"]) and href.startswith("blob:") and task == r["task"],
                 f"exercise: {n_options} exercises offered, inputs.npz to download, the task shown "
                 f"({task.splitlines()[0] if task else ''!r})")
    before = b.eval("document.body.dataset.ready")
    b.eval("var e=document.getElementById('exercise'); e.value='3'; e.dispatchEvent(new Event('change'))")
    wait_ready(b, before)
    r = b.eval("window.attnLab.exercise")
    right, wrong, wrong_id = exercise_answers(read_npz(base64.b64decode(r["inputs"])), 3)
    path = os.path.abspath(os.path.join(out, "exercise-3-answer.npy"))
    with open(path, "wb") as f:
        f.write(npy_bytes(flat(wrong), [6, 6]))
    before = b.eval("document.body.dataset.ready")
    root = b.call("DOM.getDocument")["root"]["nodeId"]
    node = b.call("DOM.querySelector", {"nodeId": root, "selector": "#answer"})["nodeId"]
    b.call("DOM.setFileInputFiles", {"files": [path], "nodeId": node})
    drawn = wait_ready(b, before, seconds=5)
    if not drawn:  # the file chosen without a change event: the page's Check button
        b.eval("document.getElementById('check').click()")
        drawn = wait_ready(b, before)
    rows = b.eval("Array.from(document.querySelectorAll('#shapes tbody tr')).map(function(r){return r.innerText})")
    diag = b.eval("document.getElementById('diagnosis').innerText")
    rc, cli = cli_exercise_check(binary, 3, 0, path)
    errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
    same = b.eval("window.attnLab.check.check") == cli
    checks.check(drawn and rows and "fail" in rows[0] and wrong_id in diag and same and not errors,
                 f"exercise: an uploaded answer shows the stage table ({rows}) and the diagnosis of "
                 f"`attn exercise 3 --check` ({diag[:60]!r}), no console error" + (f": {errors[:3]}" if errors else ""))
    b.screenshot(os.path.join(out, "serve-exercise.png"))
    open_page(b, s, "/exercise?lang=zh", "exercise (zh)", checks)
    checks.check(b.eval("document.getElementById('check').textContent") == "检查", "exercise: the zh UI")
    return figures


def cache_tensors(binary, command):
    """The tensors of `attn model cache ... --dump -` (the command the decoder page prints)."""
    r = subprocess.run([binary] + shlex.split(command)[1:], capture_output=True, text=True, check=True)
    return {k: v for k, v in json.loads(r.stdout)["tensors"].items()}


def norms(t):
    """L2 norm of each row of a (1, T, D) tensor in the dump."""
    D = t["shape"][-1]
    d = t["data"]
    return [math.sqrt(sum(x * x for x in d[i:i + D])) for i in range(0, len(d), D)]


def close(a, b, tol=1e-4):
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def sampling_reference(logits, temperature, top_k, top_p):
    """The distribution the decoder page samples from, computed here from `attn model next`'s logits:
    softmax(logits / T), the top_k most likely kept, then the most likely whose mass before each is < top_p."""
    m = max(logits)
    e = [math.exp((x - m) / temperature) for x in logits]
    z = sum(e)
    p = [x / z for x in e]
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))[:top_k or len(p)]
    mass = sum(p[i] for i in order)
    kept, before = [], 0.0
    for i in order:
        if kept and before >= top_p:
            break
        kept.append(i)
        before += p[i] / mass
    total = sum(p[i] for i in kept)
    return {i: p[i] / total for i in kept}


def decoder_browser_checks(binary, b, s, out, checks):
    """The /decoder page: its numbers are the CLI's (`attn model next`, `generate`, `ablate`, `cache`)."""
    figures = {"decoder_ms": open_page(b, s, "/decoder", "decoder", checks)}
    r = b.eval("window.attnLab.decoder")
    ref = attn_json(binary, shlex.split(r["command"])[1:])
    shown = b.eval("document.querySelector('#shapes tbody tr').innerText")
    top = ref["next"][0]
    checks.check(r["next"] == ref["next"] and f"{100 * top['prob']:.2f}%" in shown and str(top["id"]) in shown,
                 f"decoder: the page's top next token and probability are `{r['command']}`'s ({shown!r})")
    b.eval("document.getElementById('prompt').value='Thou'; document.getElementById('go').click()")
    b.pump(1.0)
    r2 = b.eval("window.attnLab.decoder")
    ref2 = attn_json(binary, shlex.split(r2["command"])[1:])
    checks.check("'Thou'" in r2["command"] and r2["next"] == ref2["next"],
                 f"decoder: a new prompt typed: the distribution of `{r2['command']}`")
    b.eval("var e=document.getElementById('temperature'); e.value='0.9'; e.dispatchEvent(new Event('change'))")
    b.eval("var e=document.getElementById('seed'); e.value='5'; e.dispatchEvent(new Event('change'))")
    b.pump(1.5)
    r3 = b.eval("window.attnLab.decoder")
    before = b.eval("document.body.dataset.ready")
    b.eval("document.getElementById('sample').click()")
    wait_ready(b, before)
    sampled = b.eval("window.attnLab.sampled")
    step = attn_json(binary, shlex.split(r3["sample"]["command"])[1:])["steps"][0]
    prompt = b.eval("document.getElementById('prompt').value")
    checks.check(sampled["id"] == step["id"] and prompt == "Thou" + step["text"],
                 f"decoder: Sample appends `{r3['sample']['command']}`'s token ({step['text']!r}): "
                 f"the prompt is now {prompt!r}")
    before = b.eval("document.body.dataset.ready")
    b.eval("document.getElementById('head-1-2').click()")
    wait_ready(b, before)
    r4 = b.eval("window.attnLab.decoder")
    shown = b.eval("(document.getElementById('ablated') || {}).textContent || ''")
    ref4 = attn_json(binary, shlex.split(r4["ablated"]["command"])[1:])["ablated"]["top"] if r4["ablated"] else {}
    checks.check(r4["ablated"] and "--heads 1.2" in r4["ablated"]["command"] and
                 f"{100 * ref4.get('prob', -1):.2f}%" in shown,
                 f"decoder: a click on head 1.2 ablates it as `attn model ablate --heads 1.2` says ({shown!r})")
    decoder_view_checks(binary, b, s, out, checks)
    return figures


def decoder_view_checks(binary, b, s, out, checks):
    """The embeddings, the residual stream and the overlaid heads equal `attn model cache`'s tensors;
    top-k and top-p change the distribution sampled from as computed here from the CLI's logits."""
    before = b.eval("document.body.dataset.ready")
    b.eval("var e=document.getElementById('layer'); e.value='2'; e.dispatchEvent(new Event('change'))")
    wait_ready(b, before)
    r = b.eval("window.attnLab.decoder")
    cache = cache_tensors(binary, r["cache_command"])
    emb = r["embeddings"]
    L, T = r["layers"], len(r["tokens"])
    D = cache["hook_embed"]["shape"][-1]
    ok = (close(emb["token_norm"], norms(cache["hook_embed"]))
          and close(emb["position_norm"], norms(cache["hook_pos_embed"]))
          and close(emb["token"][T - 1], cache["hook_embed"]["data"][(T - 1) * D:(T - 1) * D + emb["dims"]]))
    shown = b.eval("document.querySelector('#embed-norms tr:last-child').innerText")
    checks.check(ok and f"{emb['token_norm'][-1]:.4f}" in shown,
                 f"decoder: embedding norms and dims equal `{r['cache_command']}`'s hook_embed, hook_pos_embed "
                 f"({shown!r})")
    ok = close(r["residual"][0], norms(cache["blocks.0.hook_resid_pre"]))
    for l in range(L):
        ok = ok and close(r["residual"][l + 1], norms(cache[f"blocks.{l}.hook_resid_post"]))
        ok = ok and close(r["attn_out"][l], norms(cache[f"blocks.{l}.hook_attn_out"]))
        ok = ok and close(r["mlp_out"][l], norms(cache[f"blocks.{l}.hook_mlp_out"]))
    shown = b.eval("document.querySelector('#residual tr:last-child').innerText")
    checks.check(ok and f"{r['mlp_out'][-1][-1]:.4f}" in shown and f"{r['residual'][-1][-1]:.4f}" in shown,
                 f"decoder: per layer, the norms of attention out, MLP out and the residual stream equal the cache's "
                 f"({shown!r})")
    pattern = cache["blocks.2.attn.hook_pattern"]["data"]
    flat = [w for h in r["pattern"] for row in h for w in row]
    lines = b.eval("(function(){var ls=document.querySelectorAll('#overlay line'); var hs={};"
                   "ls.forEach(function(l){hs[l.getAttribute('data-head')]=l.getAttribute('stroke')});"
                   "return [ls.length, hs, document.querySelectorAll('#legend button').length,"
                   "document.querySelectorAll('#overlay text.tok-q').length]})()")
    n_lines, colours, legend, labels = lines
    checks.check(r["layer"] == 2 and close(flat, pattern, 1e-5) and len(colours) == r["heads"]
                 and len(set(colours.values())) == r["heads"] and legend == r["heads"] + 1 and labels == T,
                 f"decoder: layer 2's {r['heads']} heads overlaid in {len(set(colours.values()))} colours "
                 f"({n_lines} lines, {labels} query labels, a legend of {legend}); the weights equal the cache's "
                 f"blocks.2.attn.hook_pattern")
    b.eval("document.getElementById('overlay-head-1').click()")
    b.pump(0.2)
    heads = b.eval("Array.from(new Set(Array.from(document.querySelectorAll('#overlay line'))"
                   ".map(function(l){return l.getAttribute('data-head')})))")
    checks.check(heads == ["1"], f"decoder: the legend shows one head alone ({heads})")
    b.screenshot(os.path.join(out, "serve-decoder-views.png"))
    b.eval("document.getElementById('overlay-head-1').scrollIntoView()")
    b.screenshot(os.path.join(out, "serve-decoder-overlay.png"))
    # top-k and top-p: the probabilities sampled from are those computed here from the CLI's logits
    for knob, value in (("temperature", "1.3"), ("top_k", "5"), ("top_p", "0.8"), ("seed", "2")):
        before = b.eval("document.body.dataset.ready")
        b.eval(f"var e=document.getElementById('{knob}'); e.value='{value}'; e.dispatchEvent(new Event('change'))")
        wait_ready(b, before)
    r = b.eval("window.attnLab.decoder")
    full = attn_json(binary, shlex.split(r["command"].replace("--top 10", "--top 1000"))[1:])["next"]
    logits = [0.0] * (max(n["id"] for n in full) + 1)
    for n in full:
        logits[n["id"]] = n["logit"]
    ref = sampling_reference(logits, 1.3, 5, 0.8)
    got = {n["id"]: p for n, p in zip(r["next"], r["next_sampled"]) if p > 0}
    ok = set(got) == set(ref) and all(abs(got[i] - ref[i]) < 1e-5 for i in got)
    note = b.eval("(document.getElementById('no-cli') || {}).textContent || ''")
    checks.check(ok and r["sample"]["id"] in ref and r["sample"]["command"] is None and "top-k" in note,
                 f"decoder: temperature 1.3, top-k 5, top-p 0.8 keep {sorted(ref)} with the probabilities computed "
                 f"from `attn model next`'s logits; Sample draws {r['sample']['text']!r} from them; the page says no "
                 f"command repeats it")
    before = b.eval("document.body.dataset.ready")
    b.eval("var e=document.getElementById('top_k'); e.value='1'; e.dispatchEvent(new Event('change'))")
    wait_ready(b, before)
    r = b.eval("window.attnLab.decoder")
    checks.check(r["sample"]["id"] == r["next"][0]["id"] and r["next_sampled"][0] == 1.0,
                 f"decoder: top-k 1 samples the most likely token ({r['sample']['text']!r})")
    errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
    checks.check(not errors and not foreign, "decoder: no console error, no other origin after every knob"
                 + (f": {errors[:3]}" if errors else ""))


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

        figures.update(decoder_browser_checks(binary, b, s, out, checks))
        figures.update(exercise_browser_checks(binary, b, s, out, checks))
        open_page(b, s, "/decoder?lang=zh", "decoder (zh)", checks)
        checks.check(b.eval("document.getElementById('go').textContent") == "下一个词元", "decoder: the zh UI")

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
        # Stop aborts the page's POST: the server ends the run, and another starts at once.
        b.eval("document.getElementById('steps').value='2000'; document.getElementById('start').click()")
        b.pump(1.0)
        b.eval("document.getElementById('stop').click()")
        started = None
        for _ in range(20):
            b.pump(0.25)
            status, _, _ = s.request("POST", "/api/train", {"steps": 2}, timeout=10)
            if status == 200:
                started = True
                break
        errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
        checks.check(started and not errors, "train: Stop ends the run on the server (a new one starts), "
                     "no console error" + (f": {errors[:3]}" if errors else ""))

        probe = "<img src=x onerror=window.__xss=1></script><script>window.__xss=2</script>"
        b.events.clear()
        b.open_tab()
        b.call("Page.navigate", {"url": s.base + "/sentence"})
        wait_ready(b, seconds=60)  # the first sentence's page in the frame (its answer would clear a later message)
        has_model = b.eval("document.getElementById('view') !== null")
        # Too long for the lab: said inside the page, before any request; the box takes no more.
        status, j = s.api("/api/sentence", {"text": "é" * 301})
        limit = re.search(r"at most (\d+) bytes", j["error"])
        b.eval("document.getElementById('text').value='" + "é" * 301 + "'; document.getElementById('go').click()")
        b.pump(0.5)
        said = b.eval("document.getElementById('status').textContent")
        maxlength = b.eval("document.getElementById('text').maxLength")
        checks.check(status == 413 and limit and limit.group(1) in said and str(maxlength) == limit.group(1),
                     f"sentence: 602 bytes are refused inside the page ({said!r}); the box's maxlength is {maxlength}, "
                     f"the server's limit {limit.group(1) if limit else '?'}")
        before = b.eval("document.body.dataset.ready || ''")
        b.eval(f"document.getElementById('text').value={json.dumps(probe)}; document.getElementById('go').click()")
        wait_ready(b, before, seconds=60)  # the frame loads the probe's page (MiniLM on a loaded machine: seconds)
        b.pump(0.5)
        errors, foreign = page_errors(b.events, lambda u: u.startswith(s.base + "/"))
        frame_text = b.eval("(function(){try{var d=document.getElementById('view').contentDocument;"
                            "return d.body.innerText}catch(e){return ''}})()") or ""
        said = b.eval("document.getElementById('status').textContent")
        xss = b.eval("(function(){var f=document.getElementById('view').contentWindow;"
                     "return [window.__xss||0, (f&&f.__xss)||0]})()")
        checks.check(has_model and xss == [0, 0], f"sentence: the XSS probe stays text (flags {xss})")
        checks.check(not foreign, "sentence: no request to another origin")
        if "fetch it" in said:
            print("  skip  sentence: the model is not here (scripts/fetch-model.sh); the page says how to fetch it")
        else:
            heads = b.eval("(function(){var d=document.getElementById('view').contentDocument;"
                           "return d.querySelectorAll('canvas.thumb').length})()")
            checks.check(heads == 72, f"sentence: MiniLM's 6 x 12 heads drawn ({heads})")
            # the frame may still be loading on a busy machine: wait (up to 10 s) for its text
            for _ in range(20):
                if "img" in frame_text:
                    break
                b.pump(0.5)
                frame_text = b.eval("(function(){try{var d=document.getElementById('view').contentDocument;"
                                    "return d.body.innerText}catch(e){return ''}})()") or ""
            fit = b.eval("(function(){var f=document.getElementById('view'), d=f.contentDocument.body;"
                         "return [f.clientHeight, d.offsetTop + d.offsetHeight]})()")
            checks.check(abs(fit[0] - fit[1]) <= 8, f"sentence: the frame is as tall as its page ({fit[0]} px for "
                         f"{fit[1]} px)")
            checks.check("<img" in frame_text or "img" in frame_text, "sentence: the probe's tokens shown as text")
        b.screenshot(os.path.join(out, "serve-sentence.png"))
    finally:
        b.close()
        s.stop()
    with open(os.path.join(out, "serve-summary.json"), "w") as f:
        json.dump(figures, f, indent=1)


def exercise_only(a, checks):
    s = Server(a.attn)
    try:
        print("the exercise page over HTTP:")
        exercise_checks(a.attn, s, checks, a.out)
        chromium = find_chromium(a.chromium) if not a.http_only else None
        if chromium is not None and checks.failed == 0:
            print("the exercise page in headless Chromium:")
            b = Browser(chromium, a.out)
            try:
                exercise_browser_checks(a.attn, b, s, a.out, checks)
            finally:
                b.close()
    finally:
        s.stop()
    print(f"{checks.failed} check(s) failed" if checks.failed else "every check passed")
    return 1 if checks.failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attn", required=True, help="the attn binary")
    ap.add_argument("--out", required=True, help="folder for screenshots and serve-summary.json")
    ap.add_argument("--http-only", action="store_true", help="the HTTP checks only (no browser)")
    ap.add_argument("--browser-only", action="store_true", help="the browser checks only")
    ap.add_argument("--chromium", help="the browser (default: chromium on PATH)")
    ap.add_argument("--exercise-only", action="store_true", help="the exercise page's checks only (HTTP and browser)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    checks = Checks()
    if a.exercise_only:
        return exercise_only(a, checks)
    if not a.browser_only:
        print("attn serve over HTTP:")
        http_checks(a.attn, checks, a.out)
        fault_checks(a.attn, checks)
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
