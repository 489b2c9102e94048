// tests/test_linear_attention.cpp: linear attention (attn/cpu/linear_attention.hpp).
// Each O(T) form against its own explicit O(T²) form (same features, the T×T matrix
// materialised), element by element; the O(T) backward against central finite
// differences of the forward in double; the feature maps against their formulas;
// FAVOR+ converging to softmax attention as m grows; seeded and thread-count independent.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/linear_attention.hpp"
#include "attn/cpu/linear_attention_f64.hpp"
#include "finite_diff.hpp"
#include "test_util.hpp"

using namespace attn;
using attn::test::randn;

namespace {

std::vector<LinearOptions> all_options() {
    std::vector<LinearOptions> v;
    for (FeatureMap f : {FeatureMap::EluPlusOne, FeatureMap::Favor, FeatureMap::CosFormer})
        for (bool causal : {false, true}) {
            LinearOptions o;
            o.map = f;
            o.causal = causal;
            o.features = 24;
            o.seed = 3;
            o.chunk = 5;  // several chunks and a partial last one at T = 23
            v.push_back(o);
        }
    return v;
}

std::string name_of(const LinearOptions& o) { return feature_map_name(o.map) + (o.causal ? " causal" : ""); }

std::vector<double> rand_vec(size_t n, uint64_t seed, double sd) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto& x : v) x = sd * r.normal_double();
    return v;
}

}  // namespace

TEST_CASE("linear attention: the O(T) form is its explicit O(T²) form, element by element") {
    // float: both sum the same products in another order (chunks, prefix sums); an output
    // is a weighted mean of v, so its error is ~1e-6 of max|v| (rounding of sums of <= T
    // positive terms), and 1e-5 of max|v| leaves 10x; a wrong mask or chunk edge gives ~1e-1.
    const Tensor q = randn({2, 3, 23, 8}, 1), k = randn({2, 3, 23, 8}, 2), v = randn({2, 3, 23, 6}, 3);
    double vmax = 0;
    for (float x : v.data) vmax = std::max(vmax, double(std::fabs(x)));
    for (const LinearOptions& o : all_options()) {
        const Tensor a = linear_attention(q, k, v, o, 2), b = linear_attention_explicit(q, k, v, o);
        INFO(name_of(o) << ": max |diff| " << max_abs_diff(a, b));
        CHECK(max_abs_diff(a, b) <= 1e-5 * vmax);
        // and in double, to 1e-12
        const std::vector<double> qd = rand_vec(23 * 8, 4, 1.0), kd = rand_vec(23 * 8, 5, 1.0),
                                  vd = rand_vec(23 * 6, 6, 1.0);
        const std::vector<double> x = linear_head_f64(qd, kd, vd, 23, 8, 6, o, false),
                                  y = linear_head_f64(qd, kd, vd, 23, 8, 6, o, true);
        double worst = 0;
        for (size_t n = 0; n < x.size(); ++n) worst = std::max(worst, std::fabs(x[n] - y[n]));
        INFO(name_of(o) << " double: max |diff| " << worst);
        CHECK(worst < 1e-12);
    }
}

TEST_CASE("linear attention: causal rows see only the past") {
    // changing key/value t changes no output row before t
    for (LinearOptions o : all_options()) {
        if (!o.causal) continue;
        const Tensor q = randn({1, 1, 20, 4}, 7), k = randn({1, 1, 20, 4}, 8), v = randn({1, 1, 20, 3}, 9);
        Tensor k2 = k, v2 = v;
        for (int64_t d = 0; d < 4; ++d) k2.at({0, 0, 12, d}) += 1.0f;
        for (int64_t d = 0; d < 3; ++d) v2.at({0, 0, 12, d}) -= 2.0f;
        // Favor's key shift is a max over all keys (it cancels exactly in the ratio), so
        // the rows before 12 agree to rounding, not bit for bit
        const Tensor a = linear_attention(q, k, v, o, 1), b = linear_attention(q, k2, v2, o, 1);
        double before = 0, after = 0;
        for (int64_t i = 0; i < 20; ++i)
            for (int64_t e = 0; e < 3; ++e) {
                const double diff = std::fabs(a.at({0, 0, i, e}) - b.at({0, 0, i, e}));
                (i < 12 ? before : after) = std::max(i < 12 ? before : after, diff);
            }
        INFO(name_of(o) << ": change before row 12 " << before << ", from row 12 on " << after);
        CHECK(before < 1e-5);
        CHECK(after > 1e-3);
    }
}

TEST_CASE("linear attention: the O(T) backward is the finite-difference gradient of the forward, in double") {
    // central differences with h = 1e-6 in double: truncation ~h² |f'''| ~ 1e-12, rounding
    // ~1e-16 / h = 1e-10; a wrong term of the backward is off by O(1e-2..1). Tolerance
    // 1e-6 relative to the largest gradient.
    const int64_t T = 11, Dk = 4, Dv = 3;
    for (LinearOptions o : all_options()) {
        o.chunk = 4;
        o.features = 8;
        const std::vector<double> q = rand_vec(T * Dk, 11, 0.7), k = rand_vec(T * Dk, 12, 0.7),
                                  v = rand_vec(T * Dv, 13, 1.0), dout = rand_vec(T * Dv, 14, 1.0);
        std::vector<double> dq, dk, dv;
        linear_head_backward_f64(q, k, v, T, Dk, Dv, o, dout, dq, dk, dv);
        const auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk,
                              const std::vector<double>& vv) {
            const std::vector<double> out = linear_head_f64(qq, kk, vv, T, Dk, Dv, o, true);  // the explicit form
            double s = 0;
            for (size_t n = 0; n < out.size(); ++n) s += out[n] * dout[n];
            return s;
        };
        const double h = 1e-6;
        double worst = 0, scale = 0;
        const auto fd_check = [&](const std::vector<double>& grad, int which) {
            for (size_t n = 0; n < grad.size(); ++n) {
                std::vector<double> qq = q, kk = k, vv = v;
                std::vector<double>& x = which == 0 ? qq : (which == 1 ? kk : vv);
                const double fd = attn::test::central_difference(x[n], [&] { return loss(qq, kk, vv); }, h);
                worst = std::max(worst, std::fabs(fd - grad[n]));
                scale = std::max(scale, std::fabs(fd));
            }
        };
        fd_check(dq, 0);
        fd_check(dk, 1);
        fd_check(dv, 2);
        INFO(name_of(o) << ": worst |fd - backward| " << worst << " of max |grad| " << scale);
        CHECK(scale > 1e-3);
        CHECK(worst <= 1e-6 * scale);
    }
}

TEST_CASE("linear attention: the float backward agrees with the double one") {
    const int64_t T = 40, Dk = 8, Dv = 5;
    const Tensor q = randn({1, 1, T, Dk}, 21), k = randn({1, 1, T, Dk}, 22), v = randn({1, 1, T, Dv}, 23),
                 dout = randn({1, 1, T, Dv}, 24);
    const auto as_d = [](const Tensor& t) { return std::vector<double>(t.data.begin(), t.data.end()); };
    for (LinearOptions o : all_options()) {
        o.chunk = 16;
        const LinearGrads g = linear_attention_backward(q, k, v, o, dout, 2);
        std::vector<double> dq, dk, dv;
        linear_head_backward_f64(as_d(q), as_d(k), as_d(v), T, Dk, Dv, o, as_d(dout), dq, dk, dv);
        double worst = 0, scale = 0;
        const auto cmp = [&](const Tensor& f, const std::vector<double>& d) {
            for (size_t n = 0; n < d.size(); ++n) {
                worst = std::max(worst, std::fabs(f.data[n] - d[n]));
                scale = std::max(scale, std::fabs(d[n]));
            }
        };
        cmp(g.dq, dq);
        cmp(g.dk, dk);
        cmp(g.dv, dv);
        // float rounding of sums of ~T terms: ~1e-6 of the scale; 1e-4 leaves room for the
        // exp of FAVOR+'s features (|exponent| up to ~10)
        INFO(name_of(o) << ": worst " << worst << " of " << scale);
        CHECK(worst <= 1e-4 * scale);
    }
}

TEST_CASE("linear attention: the feature maps are their formulas") {
    const int64_t T = 6, Dk = 3;
    const std::vector<double> q = rand_vec(T * Dk, 31, 1.0), k = rand_vec(T * Dk, 32, 1.0);
    // With v = e_j (one-hot key j over T keys as T value dims), the explicit output row i
    // is A_ij / sum_j A_ij: the kernel values up to a per-row factor; compare their ratios.
    std::vector<double> v(static_cast<size_t>(T * T), 0.0);
    for (int64_t j = 0; j < T; ++j) v[static_cast<size_t>(j * T + j)] = 1.0;
    const auto elu1 = [](double x) { return x > 0 ? x + 1 : std::exp(x); };
    const auto relu = [](double x) { return std::max(x, 0.0); };
    for (FeatureMap f : {FeatureMap::EluPlusOne, FeatureMap::CosFormer}) {
        LinearOptions o;
        o.map = f;
        const std::vector<double> w = linear_head_f64(q, k, v, T, Dk, T, o, true);
        for (int64_t i = 0; i < T; ++i) {
            std::vector<double> kern(static_cast<size_t>(T));
            double sum = 0;
            for (int64_t j = 0; j < T; ++j) {
                double s = 0;
                for (int64_t d = 0; d < Dk; ++d) {
                    const double a = q[static_cast<size_t>(i * Dk + d)], b = k[static_cast<size_t>(j * Dk + d)];
                    s += f == FeatureMap::EluPlusOne ? elu1(a) * elu1(b) : relu(a) * relu(b);
                }
                if (f == FeatureMap::CosFormer) s *= std::cos(std::numbers::pi / 2 * double(i - j) / double(T));
                kern[static_cast<size_t>(j)] = s;
                sum += s;
            }
            for (int64_t j = 0; j < T; ++j) {
                const double want = kern[static_cast<size_t>(j)] / (sum + (f == FeatureMap::CosFormer ? 1e-6 : 0.0));
                INFO(feature_map_name(f) << " i " << i << " j " << j);
                CHECK(std::fabs(w[static_cast<size_t>(i * T + j)] - want) < 1e-12);
            }
        }
    }
}

TEST_CASE("linear attention: FAVOR+ approaches softmax attention as m grows, and its features are orthogonal") {
    // error against softmax attention, mean over 4 draws, for m = 16 and 1024: the estimate is
    // unbiased with variance ~1/m, so 64x more features cut the error by ~8x; ask for >= 3x.
    const Tensor q = randn({1, 2, 64, 16}, 41), k = randn({1, 2, 64, 16}, 42), v = randn({1, 2, 64, 8}, 43);
    Tensor qs = q, ks = k;
    for (auto& x : qs.data) x *= 0.5f;  // moderate scores: the softmax kernel's variance stays small
    for (auto& x : ks.data) x *= 0.5f;
    const Tensor ref = attention_reference(qs, ks, v, Mask::none(), {});
    const auto err = [&](int64_t m) {
        double e = 0;
        for (uint64_t draw = 0; draw < 4; ++draw) {
            LinearOptions o;
            o.map = FeatureMap::Favor;
            o.features = m;
            o.draw = draw;
            const Tensor a = linear_attention(qs, ks, v, o, 2);
            double num = 0, den = 0;
            for (size_t n = 0; n < a.data.size(); ++n) {
                num += (a.data[n] - ref.data[n]) * (a.data[n] - ref.data[n]);
                den += ref.data[n] * ref.data[n];
            }
            e += std::sqrt(num / den) / 4;
        }
        return e;
    };
    const double e16 = err(16), e1024 = err(1024);
    INFO("relative error m=16 " << e16 << ", m=1024 " << e1024);
    CHECK(e1024 * 3 < e16);
    CHECK(e1024 < 0.1);
    // a block of Dk rows is orthogonal; rows of different draws differ; same seed, same rows
    const std::vector<double> w = favor_projection(20, 8, 5, 0), w2 = favor_projection(20, 8, 5, 0),
                              w3 = favor_projection(20, 8, 5, 1);
    CHECK(w == w2);
    CHECK(w != w3);
    for (int64_t a = 0; a < 8; ++a)
        for (int64_t b = 0; b < a; ++b) {
            double dot = 0;
            for (int64_t d = 0; d < 8; ++d)
                dot += w[static_cast<size_t>(a * 8 + d)] * w[static_cast<size_t>(b * 8 + d)];
            CHECK(std::fabs(dot) < 1e-9);
        }
}

TEST_CASE("linear attention: the same numbers at 1 and 3 threads, and bad shapes and options throw") {
    const Tensor q = randn({2, 2, 30, 8}, 51), k = randn({2, 2, 30, 8}, 52), v = randn({2, 2, 30, 4}, 53);
    for (const LinearOptions& o : all_options()) {
        CHECK(linear_attention(q, k, v, o, 1).data == linear_attention(q, k, v, o, 3).data);
        const Tensor dout = randn({2, 2, 30, 4}, 54);
        CHECK(linear_attention_backward(q, k, v, o, dout, 1).dq.data ==
              linear_attention_backward(q, k, v, o, dout, 3).dq.data);
    }
    CHECK_THROWS_AS(linear_attention(q, randn({2, 2, 31, 8}, 1), v, {}), ShapeError);
    LinearOptions bad;
    bad.map = FeatureMap::Favor;
    bad.features = 0;
    CHECK_THROWS_AS(linear_attention(q, k, v, bad), InputError);
    LinearOptions badc;
    badc.causal = true;
    badc.chunk = 0;
    CHECK_THROWS_AS(linear_attention(q, k, v, badc), InputError);
    // the working set is linear in T
    LinearOptions o;
    o.causal = true;
    const double w1 = linear_attention_workspace_bytes(4096, 64, 64, o, 1, true),
                 w2 = linear_attention_workspace_bytes(8192, 64, 64, o, 1, true);
    CHECK(w2 / w1 == doctest::Approx(2.0).epsilon(0.02));
}
