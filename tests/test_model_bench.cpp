// What `attn model bench` measures, as a library (attn/bench/model_bench.hpp):
// the batch is filled by cycling the texts, every timed run is reported, the summary
// figures are those of the times, and bad sizes are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "attn/bench/model_bench.hpp"
#include "attn/core/errors.hpp"
#include "test_util.hpp"

namespace {
const std::string kBenchModelDir = std::string(ATTN_SOURCE_DIR) + "/data/models/all-MiniLM-L6-v2";
}

TEST_CASE("model bench (library): a batch cycles the texts and reports each timed run (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const attn::BertModel m = attn::BertModel::load(attn::locate_model(kBenchModelDir));
    const auto tok = attn::WordPieceTokenizer::load(kBenchModelDir + "/vocab.txt", m.config.max_len);
    attn::BertOptions opt;
    opt.record_attention = false;
    opt.threads = 1;
    const std::vector<std::string> texts = {"Short one.", "A longer sentence with rather more words in it."};
    const attn::ModelBenchRun r = attn::bench_model_batch(m, tok, texts, 3, opt, 4, 0);
    CHECK(r.batch == 3);
    CHECK(r.texts == std::vector<std::string>{texts[0], texts[1], texts[0]});
    REQUIRE(r.ids.size() == 3);
    CHECK(r.ids[0] == tok.encode(texts[0]).ids);
    const int64_t n0 = static_cast<int64_t>(r.ids[0].size()), n1 = static_cast<int64_t>(r.ids[1].size());
    CHECK(r.tokens_real == 2 * n0 + n1);
    CHECK(r.tokens_padded == std::max(n0, n1));
    REQUIRE(r.times_ms.size() == 4);
    CHECK(r.min_ms == *std::ranges::min_element(r.times_ms));
    CHECK(r.max_ms == *std::ranges::max_element(r.times_ms));
    CHECK(r.median_ms >= r.min_ms);
    CHECK(r.median_ms <= r.max_ms);
    CHECK(r.sentences_per_s == doctest::Approx(3000.0 / r.median_ms));
    CHECK(r.cpu_seconds > 0);
    CHECK(r.bf16_min_cosine == 1.0);  // float32 weights: nothing to compare

    CHECK_THROWS_AS(attn::bench_model_batch(m, tok, texts, 0, opt, 1, 0), attn::InputError);
    CHECK_THROWS_AS(attn::bench_model_batch(m, tok, texts, 1, opt, 0, 0), attn::InputError);
    CHECK_THROWS_AS(attn::bench_model_batch(m, tok, {}, 1, opt, 1, 0), attn::InputError);
}
