#!/usr/bin/env bash
# scripts/fuzz-run.sh: libFuzzer runs over attn's readers and its command line.
#
# Targets (tests/fuzz/fuzz_<name>.cpp; each states its contract):
#   safetensors  SafeTensors::parse                (model.safetensors)
#   dump         dump_from_string                  (attn-dump JSON, also `forward --input`)
#   tokenizer    WordPieceTokenizer::encode        (any bytes as text, toy vocabulary)
#   config       read_bert_config                  (config.json [+ NUL + sentence_bert_config.json])
#   vocab        WordPieceTokenizer::load, load_tokenizer   (vocab.txt)
#   cli          the `attn` CLI11 app, parse only  (NUL-separated argv)
#   npy          npy_from_string                   (.npy: forward --input, --mask-file)
#   bpe          BpeTokenizer::parse + encode      (vocab.json [+ NUL] merges.txt)
#   bpe_json     BpeTokenizer::parse_tokenizer_json + encode   (tokenizer.json)
#   gpt2_config  read_gpt2_config                  (a GPT-2 folder's config.json)
# They are built by the asan-clang preset (clang, ASan + UBSan, libFuzzer) in
# $BUILD_DIR (default build-asan-clang). Each run starts from the committed seeds
# (tests/fuzz/corpus/<name>/) and kept crashers (tests/fuzz/regressions/<name>/),
# grows a working corpus in $BUILD_DIR/fuzz-work/<name>/ (the committed one is
# never written), and keeps any failing input there as crash-*/timeout-*/oom-*.
# A crash, a sanitizer report, an exception outside the contract, a hang
# (> 10 s) or > 2 GB fails the run. To keep a crasher as a test, copy it into
# tests/fuzz/regressions/<name>/ (the ctest fuzz_replay_<name> replays it).
#
# Usage: scripts/fuzz-run.sh [-t SECONDS | -n RUNS] [-j JOBS] [NAME...]
#   -t SECONDS  total time, split evenly over the targets (default 60)
#   -n RUNS     RUNS executions of each target, one after the other (the long run)
#   -j JOBS     with -n: JOBS libFuzzer processes at once, RUNS/JOBS executions each,
#               sharing one working corpus (logs fuzz-K.log in the working folder)
# Prints, per target: executions, seconds, exec/s. Exit 0 = no failure found.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ALL=(safetensors dump tokenizer config vocab cli npy bpe checkpoint evidence bpe_json gpt2_config lab)
total=60 runs="" jobs=1
while getopts "t:n:j:h" opt; do
    case $opt in
        t) total=$OPTARG ;;
        n) runs=$OPTARG ;;
        j) jobs=$OPTARG ;;
        *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
targets=("$@"); [[ ${#targets[@]} -gt 0 ]] || targets=("${ALL[@]}")
for t in "${targets[@]}"; do
    [[ -f "$ROOT/tests/fuzz/fuzz_$t.cpp" ]] || { echo "fuzz: unknown target '$t' (known: ${ALL[*]})" >&2; exit 2; }
done
if [[ -n "$runs" ]]; then
    [[ "$runs" =~ ^[0-9]+$ && "$runs" -ge 1 ]] || { echo "fuzz: -n RUNS must be a positive integer, got '$runs'" >&2; exit 2; }
    [[ "$jobs" =~ ^[0-9]+$ && "$jobs" -ge 1 && "$jobs" -le "$runs" ]] ||
        { echo "fuzz: -j JOBS must be an integer from 1 to RUNS, got '$jobs'" >&2; exit 2; }
else
    [[ "$jobs" == 1 ]] || { echo "fuzz: -j JOBS needs -n RUNS" >&2; exit 2; }
    [[ "$total" =~ ^[0-9]+$ && "$total" -ge ${#targets[@]} ]] ||
        { echo "fuzz: -t SECONDS must be an integer >= ${#targets[@]} (one per target), got '$total'" >&2; exit 2; }
fi
command -v clang++ >/dev/null 2>&1 || { echo "fuzz: clang++ not found; install clang (apt-get install clang)" >&2; exit 2; }

BUILD="${BUILD_DIR:-$ROOT/build-asan-clang}"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    (cd "$ROOT" && cmake --preset asan-clang -B "$BUILD" >/dev/null)
fi
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

status=0
for t in "${targets[@]}"; do
    work="$BUILD/fuzz-work/$t"
    mkdir -p "$work/corpus"
    seeds=("$ROOT/tests/fuzz/corpus/$t")
    [[ -d "$ROOT/tests/fuzz/regressions/$t" ]] && seeds+=("$ROOT/tests/fuzz/regressions/$t")
    extra=()
    case $t in safetensors|dump|config|bpe_json|gpt2_config) extra+=(-dict="$ROOT/tests/fuzz/json.dict") ;; esac
    if [[ -n "$runs" ]]; then limit=(-runs="$(( (runs + jobs - 1) / jobs ))"); else limit=(-max_total_time=$(( total / ${#targets[@]} ))); fi
    [[ $jobs -gt 1 ]] && limit+=(-jobs="$jobs" -workers="$jobs")
    echo "fuzz: $t (${limit[*]})"
    rm -f "$work"/fuzz-*.log
    t0=$(date +%s.%N)
    if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$BUILD/tests/fuzz/fuzz_$t" "$work/corpus" "${seeds[@]}" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$work/" "${extra[@]}" >"$work/log" 2>&1) ||
        grep -qs -e '^==[0-9]*==' -e 'runtime error' -e '^SUMMARY' "$work"/fuzz-*.log; then
        echo "fuzz: $t FAILED; log $work/log, input $work/crash-*|timeout-*|oom-*" >&2
        tail -n 40 "$work/log" "$work"/fuzz-*.log >&2 2>/dev/null || true
        status=1
        continue
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    # with -j the parent's log repeats its jobs' logs: count the jobs' own
    logs=("$work/log"); [[ $jobs -gt 1 ]] && logs=("$work"/fuzz-*.log)
    n=$(cat "${logs[@]}" | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{ s += $1 } END { print s + 0 }')
    printf 'fuzz: %s: %s executions in %.0f s (%.0f exec/s), no failure\n' "$t" "$n" "$secs" "$(awk -v n="$n" -v s="$secs" 'BEGIN { print n / s }')"
done
[[ $status -eq 0 ]] && echo "fuzz: no failure found"
exit $status
