#!/usr/bin/env bash
# scripts/fuzz-safetensors.sh: a bounded libFuzzer run over attn's file readers.
#
# Three targets (tests/fuzz/), each built with clang -fsanitize=fuzzer,address,undefined:
#   fuzz_safetensors  attn::SafeTensors::parse    (model weights)
#   fuzz_dump         attn::dump_from_string      (attn-dump JSON)
#   fuzz_tokenizer    attn::WordPieceTokenizer    (any bytes as text)
# A target passes when every input either parses or throws attn::InputError:
# a crash, a sanitizer report, a hang (> 5 s) or another exception fails the run,
# and the input that did it is kept in build-fuzz/ to replay.
#
# Usage: scripts/fuzz-safetensors.sh [SECONDS]   total time, split 50/30/20 (default 60)
# Needs clang++ with libFuzzer (Debian: apt-get install clang). Exit 0 = no crash found.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOTAL="${1:-60}"
if ! [[ "$TOTAL" =~ ^[0-9]+$ ]] || [[ "$TOTAL" -lt 3 ]]; then
    echo "fuzz: SECONDS must be an integer >= 3, got '$TOTAL'" >&2
    exit 2
fi
CXX="${FUZZ_CXX:-clang++}"
if ! command -v "$CXX" >/dev/null 2>&1; then
    echo "fuzz: $CXX not found; install clang (apt-get install clang) to fuzz" >&2
    exit 2
fi
OUT="$ROOT/build-fuzz"
mkdir -p "$OUT"
cd "$OUT"

FLAGS=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -fno-omit-frame-pointer -isystem /usr/include/eigen3)
for m in "$ROOT"/lib/*/include "$ROOT"/lib/*/src; do FLAGS+=(-I"$m"); done
build() {  # name sources...
    local name=$1; shift
    local srcs=("$@")
    local newest=0 f
    for f in "$ROOT/tests/fuzz/$name.cpp" "${srcs[@]/#/$ROOT/lib/}" "$ROOT"/lib/*/include/attn/*/*.hpp; do
        local t; t=$(stat -c %Y "$f"); (( t > newest )) && newest=$t
    done
    if [[ -x "$name" && $(stat -c %Y "$name") -ge $newest ]]; then return 0; fi
    echo "fuzz: building $name"
    "$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/$name.cpp" "${srcs[@]/#/$ROOT/lib/}" -lfmt -o "$name"
}
build fuzz_safetensors io/src/safetensors.cpp io/src/dump.cpp core/src/tensor.cpp
build fuzz_dump io/src/dump.cpp core/src/tensor.cpp
build fuzz_tokenizer model/src/tokenizer.cpp model/src/unicode_tables.cpp core/src/utf8.cpp

# Seed corpora: small valid inputs, so mutations start from the real structure.
mkdir -p corpus-safetensors corpus-dump corpus-tokenizer
python3 - <<'EOF'
import json, struct
def st(header, data):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data
seeds = {
    "f32": st({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, b"\0" * 16),
    "mixed": st({"__metadata__": {"format": "pt"},
                 "w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]},
                 "b": {"dtype": "BF16", "shape": [1], "data_offsets": [6, 8]},
                 "i": {"dtype": "I64", "shape": [1, 1], "data_offsets": [8, 16]},
                 "e": {"dtype": "F32", "shape": [0, 4], "data_offsets": [16, 16]}}, bytes(range(16))),
    "empty": st({}, b""),
}
for k, v in seeds.items():
    open(f"corpus-safetensors/seed-{k}", "wb").write(v)
dumps = {
    "small": '{"format":"attn-dump","version":1,"config":{"heads":2},"seed":7,'
             '"tensors":{"x":{"shape":[2,2],"data":[1,-Infinity,NaN,0.5]},"w":{"shape":[0],"data":[]}}}',
    "nested": '{"format":"attn-dump","version":1,"config":{"a":[1,{"b":null}]},"seed":0,"tensors":{}}',
}
for k, v in dumps.items():
    open(f"corpus-dump/seed-{k}", "w").write(v)
for k, v in {"en": "The animal didn't cross the street, because it was tired.",
             "mix": "Café 中文 ab\u0000\u200b한국어 \ufffd", "bad": "\udcff"}.items():
    open(f"corpus-tokenizer/seed-{k}", "wb").write(v.encode("utf-8", "surrogateescape"))
EOF
printf '"{"\n"}"\n"["\n"]"\n"\\""\n":"\n","\n"\\"dtype\\""\n"\\"shape\\""\n"\\"data_offsets\\""\n"\\"F32\\""\n"\\"F16\\""\n"\\"BF16\\""\n"\\"I64\\""\n"\\"__metadata__\\""\n"\\"format\\""\n"\\"attn-dump\\""\n"\\"version\\""\n"\\"tensors\\""\n"\\"data\\""\n"-Infinity"\n"NaN"\n"1e308"\n"18446744073709551615"\n' > json.dict

status=0
run() {  # name seconds extra...
    local name=$1 secs=$2; shift 2
    echo "fuzz: $name for ${secs}s"
    if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./$name" "corpus-${name#fuzz_}" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$OUT/$name-" "$@" >"$name.log" 2>&1; then
        echo "fuzz: $name FAILED; see $OUT/$name.log and the $name-crash-* / -timeout-* input" >&2
        tail -n 30 "$name.log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$name.log" | sed "s/^/fuzz: $name /"
    fi
}
run fuzz_safetensors $(( TOTAL * 50 / 100 )) -dict=json.dict
run fuzz_dump $(( TOTAL * 30 / 100 )) -dict=json.dict
run fuzz_tokenizer $(( TOTAL - TOTAL * 50 / 100 - TOTAL * 30 / 100 ))
[[ $status -eq 0 ]] && echo "fuzz: no crash found"
exit $status
