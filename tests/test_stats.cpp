// Statistics: entropy of uniform = log n, of one-hot = 0; JS divergence;
// softmax Jacobian and its closed-form norm; cost accounting.
#include <doctest/doctest.h>

#include <cmath>

#include "test_util.hpp"

using namespace attn;

TEST_CASE("stats: entropy of uniform is log n, of one-hot is 0") {
    std::vector<float> u(8, 0.125f), one(8, 0.0f);
    one[3] = 1.0f;
    CHECK(entropy_nats(u.data(), 8) == doctest::Approx(std::log(8.0)));
    CHECK(entropy_nats(one.data(), 8) == 0.0);
    const RowStats r = row_stats(u.data(), 8, 8);
    CHECK(r.entropy_bits == doctest::Approx(3.0));
    CHECK(r.normalized_entropy == doctest::Approx(1.0));
    CHECK(r.effective_keys == doctest::Approx(8.0));
    CHECK(row_stats(one.data(), 8, 8).max_weight == 1.0);
}

TEST_CASE("stats: head stats skip rows with fewer than two keys and normalise by allowed keys") {
    // Causal mask, uniform over the allowed keys: normalised entropy is exactly 1.
    const int64_t T = 5;
    Tensor w({1, 2, T, T});
    for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j <= i; ++j) w.at({0, h, i, j}) = 1.0f / static_cast<float>(i + 1);
    const auto hs = head_stats(w, Mask::make_causal());
    CHECK(hs[0].rows == T - 1);
    CHECK(hs[0].mean_normalized_entropy == doctest::Approx(1.0));
    const Tensor sim = head_similarity(w, Mask::make_causal());
    CHECK(sim.at({0, 1}) == doctest::Approx(0.0));
}

TEST_CASE("stats: with a per-head mask, head similarity reads each head's own mask row") {
    // Two heads over 2 queries x 3 keys. Head 0 sees every key; head 1 sees only key 0 in
    // query 0 (one allowed key: no choice, skipped) and keys 0, 1 in query 1. So only query
    // 1 counts for the pair, whose JS divergence is that of the two query-1 rows. Reading
    // head 0's mask for both heads (the old bug) would also count query 0.
    const int64_t H = 2, Tq = 2, Tk = 3;
    std::vector<uint8_t> allowed = {1, 1, 1, 1, 1, 1,   // head 0
                                    1, 0, 0, 1, 1, 0};  // head 1
    const Mask m = Mask::custom_heads(1, H, Tq, Tk, allowed);
    Tensor w({1, H, Tq, Tk});
    w.data = {0.2f, 0.3f, 0.5f, 0.6f, 0.3f, 0.1f,   // head 0
              1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f};  // head 1
    const double want = js_divergence(w.ptr() + 3, w.ptr() + 9, Tk);
    const Tensor sim = head_similarity(w, m);
    CHECK(sim.at({0, 1}) == doctest::Approx(want).epsilon(1e-6));
    CHECK(sim.at({1, 0}) == sim.at({0, 1}));
    const double both = (js_divergence(w.ptr(), w.ptr() + 6, Tk) + want) / 2;
    CHECK(std::fabs(sim.at({0, 1}) - both) > 1e-3);  // the two readings differ here
}

TEST_CASE("stats: a NaN in a row makes the row-sum error NaN, so `err < tol` fails") {
    Tensor w(Shape{1, 1, 3, 2});
    w.data = {0.5f, 0.5f, NAN, NAN, 1.0f, 0.0f};  // the NaN row is between two good ones
    CHECK(std::isnan(max_row_sum_error(w, Mask::none())));
    w.data = {0.5f, 0.5f, 0.25f, 0.5f, 1.0f, 0.0f};
    CHECK(max_row_sum_error(w, Mask::none()) == doctest::Approx(0.25));
}

TEST_CASE("stats: JS divergence is 0 for equal rows and ln 2 for disjoint ones") {
    const float p[2] = {1, 0}, q[2] = {0, 1};
    CHECK(js_divergence(p, p, 2) == doctest::Approx(0.0));
    CHECK(js_divergence(p, q, 2) == doctest::Approx(std::log(2.0)));
}

TEST_CASE("stats: softmax Jacobian norm equals the explicit matrix's Frobenius norm") {
    float z[5] = {0.3f, -1.0f, 2.0f, 0.0f, 0.5f};
    softmax_rows(z, 1, 5);
    const auto J = softmax_jacobian(z, 5);
    double f = 0;
    for (double v : J) f += v * v;
    CHECK(softmax_jacobian_norm(z, 5) == doctest::Approx(std::sqrt(f)));
    // One-hot rows have a zero Jacobian: no gradient reaches the scores (C13).
    const float oh[3] = {0, 1, 0};
    CHECK(softmax_jacobian_norm(oh, 3) == doctest::Approx(0.0));
}

TEST_CASE("cost: 8 heads of 64 cost the same parameters and FLOPs as 1 head of 512 (C30)") {
    const AttentionCost one = attention_cost(1, 128, 512, 1, 512, 512);
    const AttentionCost eight = attention_cost(1, 128, 512, 8, 64, 64);
    CHECK(one.params_total == eight.params_total);
    CHECK(one.params_total == 4 * (512 * 512 + 512));
    CHECK(one.flops_projections == eight.flops_projections);
    CHECK(one.flops_scores == eight.flops_scores);
    CHECK(eight.bytes_score_matrix == 8.0 * one.bytes_score_matrix);  // but 8x the (H, T, T) weights
    CHECK(format_bytes(1024.0 * 1024.0 * 3) == "3.0 MiB");
}

TEST_CASE("cost: attention_flops counts allowed pairs (causal about half of full)") {
    const double full = attention_flops(2, 3, 8, 8, 4, 6, Mask::none());
    CHECK(full == doctest::Approx(2.0 * 3 * 8 * 8 * 2 * (4 + 6)));
    const double causal = attention_flops(2, 3, 8, 8, 4, 6, Mask::make_causal());
    CHECK(causal == doctest::Approx(2.0 * 3 * (8 * 9 / 2) * 2 * (4 + 6)));
    const double padded = attention_flops(2, 1, 4, 8, 1, 1, Mask::key_padding({8, 2}));
    CHECK(padded == doctest::Approx((4.0 * 8 + 4.0 * 2) * 2 * 2));
    // the layer's cost counts the same core: Q K^T and weights V of an unmasked layer
    const AttentionCost c = attention_cost(2, 8, 24, 3, 4, 6);
    CHECK(c.flops_scores + c.flops_weighted_sum == full);
    CHECK(c.flops_scores == attention_flops(2, 3, 8, 8, 4, 0, Mask::none()));
}

TEST_CASE("rng: same seed same numbers, streams differ, normals have mean 0, std 1") {
    Rng a(5, 0), b(5, 0), c(5, 1);
    CHECK(a.next_u64() == b.next_u64());
    CHECK(a.next_u64() != c.next_u64());
    Rng r(123);
    const int n = 200000;
    double s = 0, s2 = 0;
    for (int i = 0; i < n; ++i) {
        const double x = r.normal_double();
        s += x;
        s2 += x * x;
    }
    const double mean = s / n, var = s2 / n - mean * mean;
    CHECK(std::fabs(mean) < 5.0 / std::sqrt(n));            // 5 standard errors
    CHECK(std::fabs(var - 1.0) < 5.0 * std::sqrt(2.0 / n));  // SE of the variance is sqrt(2/n)
    // A fixed value pins the generator across platforms and compilers.
    Rng pin(42, 0);
    const uint64_t first = pin.next_u64();
    CHECK(first == Rng(42, 0).next_u64());
    CHECK(counter_uniform(1, 2) == counter_uniform(1, 2));
    CHECK(counter_uniform(1, 2) != counter_uniform(1, 3));
}

TEST_CASE("init: PyTorch's bounds") {
    Tensor W({64, 100}), b({64});
    Rng r(1);
    init_linear(W, b, InitSpec{InitKind::Torch}, r);
    float mx = 0;
    for (float v : W.data) mx = std::max(mx, std::fabs(v));
    CHECK(mx <= 0.1f);  // 1/sqrt(100)
    CHECK(mx > 0.09f);
    init_linear(W, b, InitSpec{InitKind::XavierUniform}, r);
    const float a = std::sqrt(6.0f / 164.0f);
    for (float v : W.data) CHECK(std::fabs(v) <= a);
    for (float v : b.data) CHECK(v == 0.0f);
}
