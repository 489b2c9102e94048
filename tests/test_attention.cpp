// The reference attention itself: shapes, softmax, scales, dropout, Dv != Dk.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.hpp"

using namespace attn;

TEST_CASE("attention: softmax is stable and matches the closed form") {
    float big[3] = {1000.0f, 1001.0f, 999.0f};  // naive exp overflows here
    softmax_rows(big, 1, 3);
    const double e0 = std::exp(-1.0), e2 = std::exp(-2.0), z = e0 + 1 + e2;
    CHECK(big[0] == doctest::Approx(e0 / z));
    CHECK(big[1] == doctest::Approx(1 / z));
    CHECK(big[2] == doctest::Approx(e2 / z));
    float two[2] = {0.0f, 3.0f};  // C12: softmax([0, 3]) ~ [0.047, 0.953]
    softmax_rows(two, 1, 2);
    CHECK(two[0] == doctest::Approx(1.0 / (1.0 + std::exp(3.0))));
    float masked[3] = {-INFINITY, -INFINITY, -INFINITY};
    softmax_rows(masked, 1, 3);
    CHECK(masked[0] == 0.0f);
    CHECK(masked[2] == 0.0f);
}

// A NaN score makes its whole row NaN, as torch.softmax does, wherever it stands and even when
// every score of the row is NaN: std::max(mx, x) would skip it, and a row of NaN alone would
// pass for a fully masked one (zeros). A fully masked row stays zeros (attn's rule).
TEST_CASE("attention: a NaN score makes its softmax row NaN, a row of NaN included") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const std::vector<float>& row : {std::vector<float>{nan, nan, nan}, {1.0f, nan, 2.0f}, {nan, 1.0f, -INFINITY},
                                          {-INFINITY, -INFINITY, nan}}) {
        std::vector<float> x = row;
        softmax_rows(x.data(), 1, 3);
        CHECK((std::isnan(x[0]) && std::isnan(x[1]) && std::isnan(x[2])));
        std::vector<double> xd(row.begin(), row.end());
        softmax_rows<double>(xd.data(), 1, 3);
        CHECK((std::isnan(xd[0]) && std::isnan(xd[1]) && std::isnan(xd[2])));
    }
    // through attention_reference: a query of NaN gives NaN weights and output in its row only
    Tensor q = test::randn({1, 2, 5, 4}, 1, 0);
    const Tensor k = test::randn({1, 2, 6, 4}, 1, 1), v = test::randn({1, 2, 6, 3}, 1, 2);
    for (int64_t d = 0; d < 4; ++d) q.at({0, 1, 2, d}) = nan;
    for (const Mask& m : {Mask::none(), Mask::make_causal()}) {
        AttentionRecord rec;
        const Tensor out = attention_reference(q, k, v, m, AttentionOptions{}, &rec);
        for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < 5; ++i) {
                const bool nan_row = h == 1 && i == 2;
                for (int64_t e = 0; e < 3; ++e) CHECK(std::isnan(out.at({0, h, i, e})) == nan_row);
                for (int64_t j = 0; j < 6; ++j) CHECK(std::isnan(rec.weights.at({0, h, i, j})) == nan_row);
            }
    }
}

TEST_CASE("attention: output shapes follow (B, H, Tq, Dv), Dv independent of Dk") {
    const Tensor q = test::randn({2, 3, 4, 8}, 1, 0), k = test::randn({2, 3, 6, 8}, 1, 1),
                 v = test::randn({2, 3, 6, 5}, 1, 2);
    AttentionRecord rec;
    const Tensor out = attention_reference(q, k, v, Mask::none(), AttentionOptions{}, &rec);
    CHECK(out.shape == Shape{2, 3, 4, 5});
    CHECK(rec.weights.shape == Shape{2, 3, 4, 6});
    // Dk must agree between Q and K (C6); V may differ.
    const Tensor k_bad = test::randn({2, 3, 6, 7}, 1, 3);
    CHECK_THROWS_AS(attention_reference(q, k_bad, v, Mask::none(), AttentionOptions{}), ShapeError);
}

TEST_CASE("attention: scale kinds multiply the raw scores as documented") {
    const Tensor q = test::randn({1, 1, 3, 16}, 2, 0), k = test::randn({1, 1, 3, 16}, 2, 1),
                 v = test::randn({1, 1, 3, 4}, 2, 2);
    AttentionRecord sq, none, c;
    AttentionOptions o;
    attention_reference(q, k, v, Mask::none(), o, &sq);
    o.scale = Scale{ScaleKind::None};
    attention_reference(q, k, v, Mask::none(), o, &none);
    o.scale = Scale{ScaleKind::Constant, 0.1f};
    attention_reference(q, k, v, Mask::none(), o, &c);
    for (size_t i = 0; i < sq.scores_raw.data.size(); ++i) {
        CHECK(sq.scores_scaled.data[i] == doctest::Approx(sq.scores_raw.data[i] / 4.0f));  // 1/sqrt(16)
        CHECK(none.scores_scaled.data[i] == doctest::Approx(none.scores_raw.data[i]));
        CHECK(c.scores_scaled.data[i] == doctest::Approx(c.scores_raw.data[i] * 0.1f));
    }
    // cosine: raw scores are cosines, in [-1, 1]
    o.scale = Scale{ScaleKind::Cosine};
    AttentionRecord cos;
    attention_reference(q, k, v, Mask::none(), o, &cos);
    for (float s : cos.scores_raw.data) CHECK(std::fabs(s) <= 1.0f + 1e-6f);
}

TEST_CASE("dropout: eval is the identity, train keeps the expectation") {
    const int64_t B = 2, H = 2, T = 64;
    const Tensor q = test::randn({B, H, T, 8}, 4, 0), k = test::randn({B, H, T, 8}, 4, 1),
                 v = test::randn({B, H, T, 8}, 4, 2);
    AttentionOptions eval;
    eval.dropout = 0.3f;  // train = false: no dropout
    AttentionRecord r_eval;
    const Tensor plain = attention_reference(q, k, v, Mask::none(), AttentionOptions{});
    const Tensor out_eval = attention_reference(q, k, v, Mask::none(), eval, &r_eval);
    CHECK(max_abs_diff(plain, out_eval) == 0.0);
    CHECK(max_abs_diff(r_eval.weights, r_eval.weights_dropped) == 0.0);

    AttentionOptions tr = eval;
    tr.train = true;
    tr.seed = 77;
    AttentionRecord r;
    attention_reference(q, k, v, Mask::none(), tr, &r);
    // Every entry is 0 or w / (1 - p); the drop rate is p within 5 standard errors.
    int64_t dropped = 0, n = 0;
    double sum_dropped = 0, sum_w = 0;
    for (size_t i = 0; i < r.weights.data.size(); ++i) {
        const float w = r.weights.data[i], d = r.weights_dropped.data[i];
        if (d == 0.0f) ++dropped;
        else CHECK(d == doctest::Approx(w / 0.7f));
        sum_dropped += d;
        sum_w += w;
        ++n;
    }
    const double rate = static_cast<double>(dropped) / n, se = std::sqrt(0.3 * 0.7 / n);
    CHECK(std::fabs(rate - 0.3) < 5 * se);
    // Expectation preserved: total mass within a few percent (n = 16384 weights).
    CHECK(sum_dropped / sum_w == doctest::Approx(1.0).epsilon(0.03));
    // Same seed, same mask; another seed, another mask.
    AttentionRecord r2, r3;
    attention_reference(q, k, v, Mask::none(), tr, &r2);
    tr.seed = 78;
    attention_reference(q, k, v, Mask::none(), tr, &r3);
    CHECK(max_abs_diff(r.weights_dropped, r2.weights_dropped) == 0.0);
    CHECK(max_abs_diff(r.weights_dropped, r3.weights_dropped) > 0.0);
}
