// Masks: masked weights are exactly 0, rows sum to 1, causal upper triangle is
// 0, -inf vs -1e9, fully masked rows; shapes refused when a mask is built,
// broadcasting, combined(), and row(b) against the element rule. (The --mask
// syntax is tested in test_cli.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_util.hpp"

using namespace attn;

namespace {
struct Qkv {
    Tensor q, k, v;
};
Qkv make_qkv(int64_t B, int64_t H, int64_t T, int64_t Dk, int64_t Dv, uint64_t seed) {
    return {test::randn({B, H, T, Dk}, seed, 0), test::randn({B, H, T, Dk}, seed, 1),
            test::randn({B, H, T, Dv}, seed, 2)};
}

// Where element [b, i, j] sits in a row-major [nb, nq, nk] array whose dims of 1
// broadcast: the rule written out here again, independently of attn::Mask.
size_t broadcast_index(int64_t nb, int64_t nq, int64_t nk, int64_t b, int64_t i, int64_t j) {
    return static_cast<size_t>(((nb == 1 ? 0 : b) * nq + (nq == 1 ? 0 : i)) * nk + j);
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
            for (int64_t b = 0; b < B; ++b) {
                const MaskRow row = m.row(b, T);
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t i = 0; i < T; ++i)
                        for (int64_t j = 0; j < T; ++j)
                            if (!row.allowed(i, j)) {
                                CHECK(rec.weights.at({b, h, i, j}) == 0.0f);
                                ++zeros_checked;
                            }
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
    const MaskRow row = both.row(0, T);
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) CHECK(row.allowed(i, j) == (j <= i && allow[static_cast<size_t>(i * T + j)]));
}

TEST_CASE("masks: key padding needs one length per batch row") {
    CHECK_THROWS_AS(Mask::key_padding({3}).check(2, 5, 5), ShapeError);
}

TEST_CASE("masks: shapes are refused when the mask is built") {
    CHECK_THROWS_AS(Mask::custom(2, 3, 4, std::vector<uint8_t>(23)), ShapeError);  // wrong entry count
    CHECK_THROWS_AS(Mask::additive_mask(1, 3, 4, std::vector<float>(13)), ShapeError);
    CHECK_THROWS_AS(Mask::key_padding_bool(2, 4, std::vector<uint8_t>(7)), ShapeError);
    for (const auto& dims : {std::tuple{0, 3, 4}, {2, 0, 4}, {2, 3, 0}}) {  // zero dims, even with 0 entries
        const int B = std::get<0>(dims), Tq = std::get<1>(dims),
                  Tk = std::get<2>(dims);  // clang 14: no binding in INFO
        INFO("[" << B << ", " << Tq << ", " << Tk << "]");
        const size_t n = static_cast<size_t>(B * Tq * Tk);
        CHECK_THROWS_AS(Mask::custom(B, Tq, Tk, std::vector<uint8_t>(n)), ShapeError);
        CHECK_THROWS_AS(Mask::additive_mask(B, Tq, Tk, std::vector<float>(n)), ShapeError);
    }
    CHECK_THROWS_AS(Mask::key_padding_bool(0, 4, {}), ShapeError);
    CHECK_THROWS_AS(Mask::key_padding_bool(2, 0, {}), ShapeError);
    CHECK_THROWS_AS(Mask::key_padding({}), ShapeError);  // no batch row
    CHECK_THROWS_AS(Mask::key_padding({3, -1}), InputError);
}

TEST_CASE("masks: check() asks only whether a built mask fits the scores") {
    const Mask pad = Mask::key_padding({3, 5});
    CHECK_NOTHROW(pad.check(2, 7, 5));
    CHECK_THROWS_AS(pad.check(3, 7, 5), ShapeError);  // one length per batch row
    CHECK_THROWS_AS(pad.check(2, 7, 4), ShapeError);  // a length past the last key
    const Mask dense = Mask::custom(2, 3, 4, std::vector<uint8_t>(24, 1));
    CHECK_NOTHROW(dense.check(2, 3, 4));
    CHECK_THROWS_AS(dense.check(1, 3, 4), ShapeError);
    CHECK_THROWS_AS(dense.check(2, 5, 4), ShapeError);
    CHECK_THROWS_AS(dense.check(2, 3, 5), ShapeError);
    const Mask add = Mask::additive_mask(1, 1, 4, std::vector<float>(4));  // broadcasts over batch and queries
    CHECK_NOTHROW(add.check(7, 9, 4));
    CHECK_THROWS_AS(add.check(7, 9, 3), ShapeError);
    CHECK_NOTHROW(Mask::make_causal().check(3, 5, 8));
}

TEST_CASE("masks: dense and additive parts broadcast over batch and over queries") {
    const int64_t B = 3, Tq = 4, Tk = 5;
    std::vector<uint8_t> allow(static_cast<size_t>(B * Tq * Tk));
    std::vector<float> add(allow.size());
    for (size_t n = 0; n < allow.size(); ++n) {
        allow[n] = n % 3 != 0;
        add[n] = 0.5f * static_cast<float>(n);
    }
    for (const auto& sizes : {std::pair{B, Tq}, {int64_t{1}, Tq}, {B, int64_t{1}}, {int64_t{1}, int64_t{1}}}) {
        const int64_t nb = sizes.first, nq = sizes.second;  // clang 14 cannot capture a structured binding (INFO)
        INFO("[" << nb << ", " << nq << ", Tk]");
        const size_t n = static_cast<size_t>(nb * nq * Tk);
        const Mask dense = Mask::custom(nb, nq, Tk, std::vector<uint8_t>(allow.begin(), allow.begin() + n));
        const Mask additive = Mask::additive_mask(nb, nq, Tk, std::vector<float>(add.begin(), add.begin() + n));
        dense.check(B, Tq, Tk);
        additive.check(B, Tq, Tk);
        for (int64_t b = 0; b < B; ++b) {
            const MaskRow d = dense.row(b, Tk), a = additive.row(b, Tk);
            for (int64_t i = 0; i < Tq; ++i)
                for (int64_t j = 0; j < Tk; ++j) {
                    CHECK(d.allowed(i, j) == (allow[broadcast_index(nb, nq, Tk, b, i, j)] != 0));
                    CHECK(d.additive_at(i, j) == 0.0f);
                    CHECK(a.allowed(i, j));
                    CHECK(a.additive_at(i, j) == add[broadcast_index(nb, nq, Tk, b, i, j)]);
                }
        }
    }
    // key_padding_bool is a boolean [B, 1, Tk]: every query of batch row b sees the same keys
    const std::vector<uint8_t> keep = {1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1};
    const Mask kp = Mask::key_padding_bool(B, Tk, keep);
    for (int64_t b = 0; b < B; ++b) {
        const MaskRow row = kp.row(b, Tk);
        for (int64_t i = 0; i < Tq; ++i)
            for (int64_t j = 0; j < Tk; ++j) CHECK(row.allowed(i, j) == (keep[static_cast<size_t>(b * Tk + j)] != 0));
    }
}

namespace {

// One mask of each kind, all for batch 2, 3 queries and 4 keys.
std::vector<std::pair<std::string, Mask>> one_of_each_kind() {
    Rng r(7);
    const auto bits = [&r](size_t n) {
        std::vector<uint8_t> v(n);
        for (auto& x : v) x = r.uniform() < 0.6f;
        return v;
    };
    const auto floats = [&r](size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = r.normal();
        return v;
    };
    return {{"none", Mask::none()},
            {"causal", Mask::make_causal()},
            {"key padding", Mask::key_padding({4, 2})},
            {"boolean key padding", Mask::key_padding_bool(2, 4, bits(8))},
            {"custom [Tq, Tk]", Mask::custom(1, 3, 4, bits(12))},
            {"custom [B, Tq, Tk]", Mask::custom(2, 3, 4, bits(24))},
            {"additive [1, Tq, Tk]", Mask::additive_mask(1, 3, 4, floats(12))},
            {"additive [B, 1, Tk]", Mask::additive_mask(2, 1, 4, floats(8))}};
}

}  // namespace

TEST_CASE("masks: combined() of every pair of kinds ANDs the boolean parts and sums the additive ones") {
    const int64_t B = 2, Tq = 3, Tk = 4;
    const auto kinds = one_of_each_kind();
    for (const auto& xk : kinds)
        for (const auto& yk : kinds) {
            const std::string& xname = xk.first;  // not structured bindings: clang 14 cannot capture one (INFO)
            const std::string& yname = yk.first;
            const Mask& x = xk.second;
            const Mask& y = yk.second;
            INFO(xname << " with " << yname);
            const Mask c = x.combined(y);
            REQUIRE_NOTHROW(c.check(B, Tq, Tk));
            for (int64_t b = 0; b < B; ++b) {
                const MaskRow xr = x.row(b, Tk), yr = y.row(b, Tk), cr = c.row(b, Tk);
                for (int64_t i = 0; i < Tq; ++i)
                    for (int64_t j = 0; j < Tk; ++j) {
                        CHECK(cr.allowed(i, j) == (xr.allowed(i, j) && yr.allowed(i, j)));
                        CHECK(cr.additive_at(i, j) == xr.additive_at(i, j) + yr.additive_at(i, j));
                    }
            }
        }
    CHECK(Mask::make_causal().combined(Mask::key_padding({4, 2})).describe() == "causal + key padding (lengths 4,2)");
    const Mask per_query = Mask::custom(1, 3, 4, std::vector<uint8_t>(12, 1));
    const Mask per_batch = Mask::key_padding_bool(2, 4, std::vector<uint8_t>(8, 1));
    CHECK(per_query.combined(per_batch).describe() == "boolean [2, 3, 4]");  // both broadcasts undone
}

TEST_CASE("masks: combined() refuses masks that disagree on the batch, the queries or the keys") {
    const auto ones = [](int64_t n) { return std::vector<uint8_t>(static_cast<size_t>(n), 1); };
    CHECK_THROWS_AS(Mask::key_padding({4, 2}).combined(Mask::key_padding({4, 2, 1})), ShapeError);
    CHECK_THROWS_AS(Mask::key_padding({4}).combined(Mask::custom(2, 3, 4, ones(24))), ShapeError);
    CHECK_THROWS_AS(Mask::custom(2, 3, 4, ones(24)).combined(Mask::additive_mask(3, 3, 4, std::vector<float>(36))),
                    ShapeError);
    CHECK_THROWS_AS(Mask::custom(1, 3, 4, ones(12)).combined(Mask::custom(1, 5, 4, ones(20))), ShapeError);
    CHECK_THROWS_AS(Mask::custom(1, 3, 4, ones(12)).combined(Mask::additive_mask(1, 3, 5, std::vector<float>(15))),
                    ShapeError);
    // dims of 1 agree with anything
    CHECK_NOTHROW(Mask::key_padding({4, 2, 1}).combined(Mask::custom(1, 1, 4, ones(4))).check(3, 6, 4));
}

TEST_CASE("masks: row(b) agrees with the element rule written out, on random masks") {
    Rng r(2024);
    const auto pick = [&r](int64_t lo, int64_t hi) {  // uniform in [lo, hi]
        return std::min(hi, lo + static_cast<int64_t>(r.uniform() * static_cast<float>(hi - lo + 1)));
    };
    for (int trial = 0; trial < 300; ++trial) {
        const int64_t B = pick(1, 3), Tq = pick(1, 6), Tk = pick(1, 7);
        const bool causal = r.uniform() < 0.5f;
        std::vector<int64_t> lengths;
        if (r.uniform() < 0.5f)
            for (int64_t b = 0; b < B; ++b) lengths.push_back(pick(0, Tk));
        const int64_t db = r.uniform() < 0.5f ? 1 : B, dq = r.uniform() < 0.5f ? 1 : Tq;
        const int64_t ab = r.uniform() < 0.5f ? 1 : B, aq = r.uniform() < 0.5f ? 1 : Tq;
        std::vector<uint8_t> dense;
        if (r.uniform() < 0.5f)
            for (int64_t n = 0; n < db * dq * Tk; ++n) dense.push_back(r.uniform() < 0.7f);
        std::vector<float> add;
        if (r.uniform() < 0.5f)
            for (int64_t n = 0; n < ab * aq * Tk; ++n) add.push_back(r.normal());

        Mask m = causal ? Mask::make_causal() : Mask::none();
        if (!lengths.empty()) m = m.combined(Mask::key_padding(lengths));
        if (!dense.empty()) m = m.combined(Mask::custom(db, dq, Tk, dense));
        if (!add.empty()) m = m.combined(Mask::additive_mask(ab, aq, Tk, add));
        INFO("trial " << trial << ": " << m.describe() << " over [" << B << ", " << Tq << ", " << Tk << "]");
        REQUIRE_NOTHROW(m.check(B, Tq, Tk));

        for (int64_t b = 0; b < B; ++b) {
            const MaskRow row = m.row(b, Tk);
            for (int64_t i = 0; i < Tq; ++i) {
                int64_t count = 0;
                for (int64_t j = 0; j < Tk; ++j) {
                    const bool allowed = (!causal || j <= i) &&
                                         (lengths.empty() || j < lengths[static_cast<size_t>(b)]) &&
                                         (dense.empty() || dense[broadcast_index(db, dq, Tk, b, i, j)]);
                    const float shift = add.empty() ? 0.0f : add[broadcast_index(ab, aq, Tk, b, i, j)];
                    CHECK(row.allowed(i, j) == allowed);
                    CHECK(row.additive_at(i, j) == shift);
                    count += allowed ? 1 : 0;
                    // what the tiled kernels rely on to skip work
                    if (j >= row.key_end(i))
                        for (int64_t i2 = 0; i2 <= i; ++i2) CHECK_FALSE(row.allowed(i2, j));
                    if (row.all_allowed(i, j))
                        for (int64_t i2 = i; i2 < Tq; ++i2)
                            for (int64_t j2 = 0; j2 <= j; ++j2)
                                CHECK((row.allowed(i2, j2) && row.additive_at(i2, j2) == 0.0f));
                }
                CHECK(row.allowed_count(i) == count);
            }
        }
    }
}
