#!/usr/bin/env bash
# Makes data/evidence/induction-full.json, the stored run lesson 22 cites: `attn train --task
# induction` at its defaults, once per seed (0..4), each run's config and induction report
# kept, with where it was made. Usage: scripts/make-induction-evidence.sh [ATTN] [OUT]
set -euo pipefail
attn=${1:-build/attn}
out=${2:-data/evidence/induction-full.json}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in 0 1 2 3 4; do
  "$attn" train --task induction --seed "$s" --threads 2 --quiet --json "$tmp/seed$s.json"
done
python3 - "$tmp" "$out" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, sys, datetime, platform, os
tmp, out, commit = sys.argv[1:4]
cpu = "unknown"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip(); break
except OSError:
    pass
runs = []
for s in range(5):
    j = json.load(open(os.path.join(tmp, f"seed{s}.json")))
    runs.append({"seed": s, "model": j["model"], "task": j["task"], "training": j["training"],
                 "result": j["result"], "induction": j["induction"]})
doc = {"format": "attn-induction-evidence", "version": 1,
       "made": {"command": "attn train --task induction --seed S --threads 2 --json FILE, S = 0..4 "
                           "(scripts/make-induction-evidence.sh)",
                "commit": commit, "processor": cpu,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
       "runs": runs}
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, separators=(",", ":"))
os.replace(out + ".tmp", out)
PY
echo "wrote $out"
