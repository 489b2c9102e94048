// attn/bench/model_bench.hpp: what `attn model bench` measures, as a library:
// the pretrained encoder's latency (forward + mean pooling, no attention recorded,
// as a plain model(input) call in PyTorch) at one batch size.
//
// A batch of B sentences cycles through a pool of texts (kModelBenchTexts by
// default). It runs `warmup` times untimed, then `repeat` times, each timed by the
// steady clock (wall) and by the process CPU clock (all threads). With bf16
// weights it also measures how far the sentence embeddings (unit vectors) are
// from float32's: the largest element difference and the smallest cosine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/model/bert.hpp"
#include "attn/model/tokenizer.hpp"

namespace attn {

// The sentences the benchmark encodes by default (cycled to fill a batch). The first one is
// 16 tokens with [CLS] and [SEP]: the batch-1 case. scripts/bench-model-torch.py reads the
// ids from `attn model bench --json`, so both sides encode the same ids.
extern const std::vector<std::string> kModelBenchTexts;

struct ModelBenchRun {
    int64_t batch = 0;
    int64_t tokens_padded = 0;  // T: the longest sentence, which the batch is padded to
    int64_t tokens_real = 0;    // the tokens of all sentences, padding left out
    std::vector<double> times_ms;  // wall time of each timed run, in run order
    double median_ms = 0, min_ms = 0, max_ms = 0;
    double cpu_seconds = 0;  // median process CPU time (all threads) of a run
    double sentences_per_s = 0, sentences_per_cpu_s = 0;
    std::vector<std::string> texts;
    std::vector<std::vector<int32_t>> ids;
    // bf16 weights only (opt.bf16_weights): against float32's sentence embeddings
    double bf16_max_abs_diff = 0, bf16_min_cosine = 1;
};

// Times batch size B (>= 1) with `opt`, `warmup` untimed and `repeat` (>= 1) timed runs,
// sentences taken in turn from `texts` (not empty). InputError on a bad size or text.
ModelBenchRun bench_model_batch(const BertModel& model, const WordPieceTokenizer& tok,
                                const std::vector<std::string>& texts, int64_t B, const BertOptions& opt,
                                int64_t repeat, int64_t warmup);

}  // namespace attn
