// Multi-head attention: split/merge, the wrong merge, projections, shapes of every step.
#include <doctest/doctest.h>

#include <map>

#include "test_util.hpp"

using namespace attn;

TEST_CASE("mha: split then merge is the identity, the wrong merge scrambles") {
    const Tensor x = test::randn({2, 5, 12}, 3);
    const Tensor heads = split_heads(x, 3);
    CHECK(heads.shape == Shape{2, 3, 5, 4});
    CHECK(heads.at({1, 2, 3, 1}) == x.at({1, 3, 2 * 4 + 1}));
    CHECK(max_abs_diff(merge_heads(heads), x) == 0.0);
    const Tensor wrong = merge_heads_wrong(heads);
    CHECK(wrong.shape == x.shape);           // same shape ...
    CHECK(max_abs_diff(wrong, x) > 0.1);     // ... different contents
    // With one head the transpose is a no-op and both merges agree.
    const Tensor one = split_heads(x, 1);
    CHECK(max_abs_diff(merge_heads_wrong(one), merge_heads(one)) == 0.0);
}

TEST_CASE("mha: Linear is x W^T + b with W stored [out, in]") {
    Linear lin(3, 2, true);
    lin.W = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    lin.b = Tensor::from({2}, {0.5f, -1});
    const Tensor y = lin.forward(Tensor::from({1, 3}, {1, 0, -1}));
    CHECK(y.shape == Shape{1, 2});
    CHECK(y.data[0] == doctest::Approx(1 - 3 + 0.5));
    CHECK(y.data[1] == doctest::Approx(4 - 6 - 1));
    CHECK_THROWS_AS(lin.forward(Tensor({1, 4})), ShapeError);
}

TEST_CASE("mha: every step is traced with its shape, Dv != Dk") {
    MultiHeadAttention mha(MhaConfig{16, 2, 6, 10, true});
    Rng r(1);
    mha.init(InitSpec{}, r);
    std::map<std::string, Shape> seen;
    TraceFn fn = [&](const TraceEvent& e) { seen[e.name] = e.shape; };
    ForwardRecord rec;
    const Tensor out = mha.forward(test::randn({2, 6, 16}, 5), Mask::make_causal(), AttentionOptions{}, &rec, &fn);
    CHECK(seen["x"] == Shape{2, 6, 16});
    CHECK(seen["Q"] == Shape{2, 6, 12});
    CHECK(seen["V"] == Shape{2, 6, 20});
    CHECK(seen["Q_heads"] == Shape{2, 2, 6, 6});
    CHECK(seen["V_heads"] == Shape{2, 2, 6, 10});
    CHECK(seen["scores"] == Shape{2, 2, 6, 6});
    CHECK(seen["weights"] == Shape{2, 2, 6, 6});
    CHECK(seen["head_out"] == Shape{2, 2, 6, 10});
    CHECK(seen["merged"] == Shape{2, 6, 20});
    CHECK(seen["out"] == Shape{2, 6, 16});
    CHECK(out.shape == Shape{2, 6, 16});
    CHECK(rec.attn.scores_masked.shape == Shape{2, 2, 6, 6});
    CHECK(mha.o_proj.W.shape == Shape{16, 20});  // nn.Linear [out, in]
}

TEST_CASE("mha: config validation") {
    CHECK_THROWS_AS(MhaConfig({16, 3}).resolved(), InputError);  // 16 % 3 != 0 without d_k
    CHECK(MhaConfig({16, 3, 5}).resolved().d_v == 5);
    CHECK_THROWS_AS(MhaConfig({0, 1}).resolved(), InputError);
    CHECK_THROWS_AS(MhaConfig({16, 0}).resolved(), InputError);
}

TEST_CASE("mha: zero init makes every head identical (C9)") {
    MultiHeadAttention mha(MhaConfig{8, 2});
    Rng r(1);
    mha.init(InitSpec{InitKind::Zeros}, r);
    ForwardRecord rec;
    mha.forward(test::randn({1, 4, 8}, 2), Mask::none(), AttentionOptions{}, &rec);
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
            CHECK(rec.attn.weights.at({0, 0, i, j}) == rec.attn.weights.at({0, 1, i, j}));
            CHECK(rec.attn.weights.at({0, 0, i, j}) == doctest::Approx(0.25f));
        }
}
