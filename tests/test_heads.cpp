// Tests of the reading of attention heads (attn/model/heads.hpp) on small
// hand-made weights whose figures are known: entropy and look-alike heads,
// attention sinks, the probe.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/model/heads.hpp"

using namespace attn;

namespace {

// (1, 2, T, T): head 0 puts every row on key 0, head 1 spreads every row evenly.
Tensor sink_and_uniform(int64_t T) {
    Tensor w({1, 2, T, T});
    for (int64_t i = 0; i < T; ++i) {
        w.at({0, 0, i, 0}) = 1.0f;
        for (int64_t j = 0; j < T; ++j) w.at({0, 1, i, j}) = 1.0f / static_cast<float>(T);
    }
    return w;
}

}  // namespace

TEST_CASE("heads: head_figures gives 0 entropy to a one-hot head, 1 to a uniform one, and their JS divergence") {
    const HeadFigures f = head_figures({sink_and_uniform(2), sink_and_uniform(2)}, Mask::none());
    REQUIRE(f.entropy.size() == 2);
    REQUIRE(f.similarity.size() == 2);
    CHECK(f.entropy[0][0] == doctest::Approx(0.0));
    CHECK(f.entropy[0][1] == doctest::Approx(1.0));
    // rows (1, 0) and (1/2, 1/2): m = (3/4, 1/4); JS = (ln(4/3) + (ln(2/3) + ln 2) / 2) / 2
    const double js = (std::log(4.0 / 3.0) + 0.5 * (std::log(2.0 / 3.0) + std::log(2.0))) / 2.0;
    CHECK(f.similarity[1].at({0, 1}) == doctest::Approx(js));
    CHECK(f.similarity[1].at({1, 0}) == doctest::Approx(js));
    // causal: row 0 sees one key and carries no choice, so only row 1 counts
    Tensor c({1, 1, 2, 2});
    c.at({0, 0, 0, 0}) = 1.0f;
    c.at({0, 0, 1, 0}) = c.at({0, 0, 1, 1}) = 0.5f;
    CHECK(head_figures({c}, Mask::make_causal()).entropy[0][0] == doctest::Approx(1.0));
}

TEST_CASE("heads: head pairs come most alike first, and near-duplicates are those under the threshold") {
    const Tensor sim = Tensor::from({3, 3}, {0.0f, 0.25f, 0.03125f,  //
                                             0.25f, 0.0f, 0.03125f,  //
                                             0.03125f, 0.03125f, 0.0f});
    const std::vector<HeadPair> all = head_pairs(sim);
    REQUIRE(all.size() == 3);
    CHECK((all[0].a == 0 && all[0].b == 2));  // equal divergences stay in (a, b) order
    CHECK((all[1].a == 1 && all[1].b == 2));
    CHECK((all[2].a == 0 && all[2].b == 1));
    CHECK(all[2].js == 0.25);
    CHECK(near_duplicate_heads(sim).size() == 2);  // kNearDuplicateJs = 0.05
    CHECK(near_duplicate_heads(sim, 0.03125).empty());  // strictly under
    CHECK(near_duplicate_heads(sim, 1.0).size() == 3);
    CHECK_THROWS_AS(head_pairs(Tensor({2, 3})), ShapeError);
}

TEST_CASE("heads: sink kinds are [CLS], [SEP], one punctuation character (ASCII or Unicode), and the rest") {
    CHECK(sink_kind("[CLS]") == SinkKind::Cls);
    CHECK(sink_kind("[SEP]") == SinkKind::Sep);
    for (const char* p : {",", "'", "$", "\u00ab", "\u2014", "\u3002"})  // « — 。
        CHECK_MESSAGE(sink_kind(p) == SinkKind::Punct, p);
    for (const char* o : {"the", "##s", "a", "\u4e2d", "[PAD]", "[UNK]", "", ",,"})  // 中: split off, not punctuation
        CHECK_MESSAGE(sink_kind(o) == SinkKind::Other, o);
}

TEST_CASE("heads: layer_sinks sums each kind's share of the weight, averaged over heads and query rows") {
    // head 0 gives everything to [CLS], head 1 a quarter to each token
    const Sinks s = layer_sinks(sink_and_uniform(4), 0, {"[CLS]", "hi", ",", "[SEP]"});
    CHECK(s.received.shape == Shape{2, 4});
    CHECK(s.received.at({0, 0}) == doctest::Approx(1.0));
    CHECK(s.received.at({1, 3}) == doctest::Approx(0.25));
    REQUIRE(s.per_key.size() == 4);
    CHECK(s.per_key[0] == doctest::Approx(0.625));
    CHECK(s.cls == doctest::Approx(0.625));
    CHECK(s.other == doctest::Approx(0.125));
    CHECK(s.punct == doctest::Approx(0.125));
    CHECK(s.sep == doctest::Approx(0.125));
    CHECK(s.top == 0);
    // a padded row: only the real tokens' rows and keys are read
    const Sinks p = layer_sinks(sink_and_uniform(4), 0, {"[CLS]", "hi", "[SEP]"});
    CHECK(p.per_key.size() == 3);
    CHECK(p.cls == doctest::Approx(0.625));
    CHECK_THROWS_AS(layer_sinks(sink_and_uniform(2), 0, {"[CLS]", "a", "[SEP]"}), ShapeError);
}

TEST_CASE("heads: the probe averages the query tokens' weight on each candidate's tokens") {
    Tensor w({1, 1, 3, 3});
    w.at({0, 0, 1, 0}) = 0.5f, w.at({0, 0, 1, 2}) = 0.5f;  // query 1: half on key 0, half on key 2
    w.at({0, 0, 2, 1}) = 1.0f;                              // query 2: all on key 1
    const std::vector<ProbeRow> rows = probe_heads({w, w}, 0, {1, 2}, {{0}, {1, 2}});
    REQUIRE(rows.size() == 2);
    CHECK((rows[1].layer == 1 && rows[1].head == 0));
    CHECK(rows[0].weight[0] == doctest::Approx(0.25));  // (0.5 + 0) / 2
    CHECK(rows[0].weight[1] == doctest::Approx(0.75));  // (0.5 + 1) / 2
    CHECK_THROWS_AS(probe_heads({w}, 0, {3}, {{0}}), ShapeError);
    CHECK_THROWS_AS(probe_heads({w}, 0, {}, {{0}}), InputError);
}
