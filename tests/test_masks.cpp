// Masks: masked weights are exactly 0, rows sum to 1, causal upper triangle is
// 0, -inf vs -1e9, fully masked rows. (The --mask syntax is tested in test_cli.cpp.)
#include <doctest/doctest.h>

#include <cmath>

#include "test_util.hpp"

using namespace attn;

namespace {
struct Qkv {
    Tensor q, k, v;
};
Qkv make_qkv(int64_t B, int64_t H, int64_t T, int64_t Dk, int64_t Dv, uint64_t seed) {
    return {test::randn({B, H, T, Dk}, seed, 0), test::randn({B, H, T, Dk}, seed, 1), test::randn({B, H, T, Dv}, seed, 2)};
}
}  // namespace

TEST_CASE("masks: disallowed weights are exactly 0 and allowed rows sum to 1") {
    const int64_t B = 3, H = 2, T = 7;
    const auto [q, k, v] = make_qkv(B, H, T, 8, 5, 11);
    const std::pair<const char*, Mask> masks[] = {
        {"causal", Mask::make_causal()},
        {"pad:7,3,5", Mask::key_padding({7, 3, 5})},
        {"causal+pad:4,7,1", Mask::key_padding({4, 7, 1}).combined(Mask::make_causal())}};
    for (const auto& [name, m] : masks) {
        SUBCASE(name) {
            AttentionRecord rec;
            attention_reference(q, k, v, m, AttentionOptions{}, &rec);
            int zeros_checked = 0;
            for (int64_t b = 0; b < B; ++b)
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t i = 0; i < T; ++i)
                        for (int64_t j = 0; j < T; ++j)
                            if (!m.allowed(b, i, j)) {
                                CHECK(rec.weights.at({b, h, i, j}) == 0.0f);
                                ++zeros_checked;
                            }
            CHECK(zeros_checked > 0);
            CHECK(max_row_sum_error(rec.weights, m) < 1e-6);
        }
    }
}

TEST_CASE("masks: causal leaves the upper triangle at 0 and the first row one-hot") {
    const auto [q, k, v] = make_qkv(1, 1, 5, 4, 4, 3);
    AttentionRecord rec;
    attention_reference(q, k, v, Mask::make_causal(), AttentionOptions{}, &rec);
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = i + 1; j < 5; ++j) CHECK(rec.weights.at({0, 0, i, j}) == 0.0f);
    CHECK(rec.weights.at({0, 0, 0, 0}) == doctest::Approx(1.0f));
}

TEST_CASE("masks: -inf and -1e9 agree on rows with a visible key, differ on a fully masked row") {
    const auto [q, k, v] = make_qkv(2, 1, 4, 4, 3, 5);
    const Mask m = Mask::key_padding({0, 3});  // batch row 0 has no key at all
    AttentionOptions inf_opt, big_opt;
    big_opt.fill = -1e9f;
    AttentionRecord r_inf, r_big;
    const Tensor o_inf = attention_reference(q, k, v, m, inf_opt, &r_inf);
    const Tensor o_big = attention_reference(q, k, v, m, big_opt, &r_big);
    // batch row 1: identical (exp(-1e9 - max) underflows to exactly 0)
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) CHECK(r_inf.weights.at({1, 0, i, j}) == r_big.weights.at({1, 0, i, j}));
    // batch row 0, fully masked: -inf gives all-zero weights and a zero output (attn's rule),
    // -1e9 gives uniform weights 1/T over every key, as PyTorch does.
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
            CHECK(r_inf.weights.at({0, 0, i, j}) == 0.0f);
            CHECK(r_big.weights.at({0, 0, i, j}) == doctest::Approx(0.25f));
        }
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t c = 0; c < 3; ++c) {
            CHECK(o_inf.at({0, 0, i, c}) == 0.0f);
            CHECK(std::isfinite(o_big.at({0, 0, i, c})));
        }
}

TEST_CASE("masks: a boolean key padding mask equals the length form") {
    const auto [q, k, v] = make_qkv(2, 2, 5, 4, 4, 9);
    std::vector<uint8_t> keep = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
    const Tensor a = attention_reference(q, k, v, Mask::key_padding_bool(2, 5, keep), AttentionOptions{});
    const Tensor b = attention_reference(q, k, v, Mask::key_padding({3, 5}), AttentionOptions{});
    CHECK(max_abs_diff(a, b) == 0.0);
}

TEST_CASE("masks: an additive -inf mask equals the boolean mask, combinations AND") {
    const int64_t T = 6;
    const auto [q, k, v] = make_qkv(1, 2, T, 4, 4, 13);
    std::vector<float> add(T * T, 0.0f);
    std::vector<uint8_t> allow(T * T, 1);
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
            if ((i + j) % 3 == 0 && j != i) {
                add[static_cast<size_t>(i * T + j)] = -INFINITY;
                allow[static_cast<size_t>(i * T + j)] = 0;
            }
    const Tensor a = attention_reference(q, k, v, Mask::additive_mask(1, T, T, add), AttentionOptions{});
    const Tensor b = attention_reference(q, k, v, Mask::custom(1, T, T, allow), AttentionOptions{});
    CHECK(max_abs_diff(a, b) == 0.0);
    const Mask both = Mask::make_causal().combined(Mask::custom(1, T, T, allow));
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) CHECK(both.allowed(0, i, j) == (j <= i && allow[static_cast<size_t>(i * T + j)]));
}

TEST_CASE("masks: key padding needs one length per batch row") {
    CHECK_THROWS_AS(Mask::key_padding({3}).check(2, 5, 5), ShapeError);
}
