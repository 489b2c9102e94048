// The encoder's latency at one batch size (attn/bench/model_bench.hpp).
#include "attn/bench/model_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/bench/bench.hpp"
#include "attn/core/stats.hpp"  // median

namespace attn {

const std::vector<std::string> kModelBenchTexts = {
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A man is playing a guitar on the stage tonight.",
    "Attention weights tell us where each token looks.",
    "The animal didn't cross the street because it was too tired.",
    "Transformers replaced recurrent networks for most language tasks in a few years.",
    "It rained all day.",
    "Mean pooling over the real tokens gives one vector per sentence, ready for cosine similarity.",
    "She sells sea shells by the sea shore.",
};

namespace {

// With bf16 weights: how far the sentence embeddings (unit vectors) are from float32's, as
// the largest element difference and the smallest cosine over the batch.
std::pair<double, double> bf16_gap(const BertModel& m, const std::vector<std::vector<int32_t>>& ids,
                                   const BertOptions& bo) {
    BertOptions f32 = bo;
    f32.bf16_weights = false;
    const Tensor a = m.forward(ids, bo).sentence, b = m.forward(ids, f32).sentence;
    const int64_t B = a.dim(0), D = a.dim(1);
    double max_diff = 0, min_cos = 1;
    for (int64_t s = 0; s < B; ++s) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) {
            const size_t e = static_cast<size_t>(s * D + d);
            dot += static_cast<double>(a.data[e]) * b.data[e];
            max_diff = std::max(max_diff, static_cast<double>(std::fabs(a.data[e] - b.data[e])));
        }
        min_cos = std::min(min_cos, dot);
    }
    return {max_diff, min_cos};
}

}  // namespace

ModelBenchRun bench_model_batch(const BertModel& model, const WordPieceTokenizer& tok,
                                const std::vector<std::string>& texts, int64_t B, const BertOptions& opt,
                                int64_t repeat, int64_t warmup) {
    if (B < 1 || repeat < 1 || warmup < 0 || texts.empty())
        throw InputError(
            fmt::format("model bench: needs batch >= 1, repeat >= 1, warmup >= 0 and a text, got batch {}, "
                        "repeat {}, warmup {}, {} texts",
                        B, repeat, warmup, texts.size()));
    ModelBenchRun run;
    run.batch = B;
    for (int64_t b = 0; b < B; ++b) {
        run.texts.push_back(texts[static_cast<size_t>(b) % texts.size()]);
        run.ids.push_back(tok.encode(run.texts.back()).ids);
        run.tokens_real += static_cast<int64_t>(run.ids.back().size());
        run.tokens_padded = std::max<int64_t>(run.tokens_padded, static_cast<int64_t>(run.ids.back().size()));
    }
    for (int64_t w = 0; w < warmup; ++w) (void)model.forward(run.ids, opt);
    std::vector<double> cpu_s;
    for (int64_t r = 0; r < repeat; ++r) {
        const double c0 = process_cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        const BertOutput out = model.forward(run.ids, opt);
        const auto t1 = std::chrono::steady_clock::now();
        cpu_s.push_back(process_cpu_seconds() - c0);
        run.times_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (out.sentence.empty()) throw std::logic_error("model bench: the encoder gave no sentence embeddings");
    }
    if (opt.bf16_weights) std::tie(run.bf16_max_abs_diff, run.bf16_min_cosine) = bf16_gap(model, run.ids, opt);
    const auto [lo, hi] = std::ranges::minmax(run.times_ms);
    run.min_ms = lo;
    run.max_ms = hi;
    run.median_ms = median(run.times_ms);
    run.cpu_seconds = median(cpu_s);
    run.sentences_per_s = 1000.0 * static_cast<double>(B) / run.median_ms;
    run.sentences_per_cpu_s = run.cpu_seconds > 0 ? static_cast<double>(B) / run.cpu_seconds : 0.0;
    return run;
}

}  // namespace attn
