// tests/test_score_options.cpp: grouped-query heads, RoPE, ALiBi, logit softcap and the
// query offset (AttentionOptions, attn/core/attention.hpp): the reference against
// their definitions, the tiled kernel against the reference element by element, and
// the implementations that lack them refusing them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cpu/flash_backward.hpp"
#include "attn/nn/backend.hpp"
#include "test_util.hpp"

using namespace attn;
using attn::test::randn;

namespace {

// The paper's reference code, written independently of alibi_slopes: the power-of-two
// sequence, and for other H the power of two below plus every other slope of twice it.
std::vector<double> paper_slopes(int64_t n) {
    auto pow2 = [](int64_t m) {
        std::vector<double> s;
        const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(m)) - 3.0)));
        for (int64_t i = 0; i < m; ++i) s.push_back(start * std::pow(start, static_cast<double>(i)));
        return s;
    };
    const double l = std::log2(static_cast<double>(n));
    if (l == std::floor(l)) return pow2(n);
    const int64_t c = int64_t(1) << static_cast<int>(std::floor(l));
    std::vector<double> s = pow2(c);
    const std::vector<double> twice = paper_slopes(2 * c);
    for (int64_t i = 0; i < n - c; ++i) s.push_back(twice[static_cast<size_t>(2 * i)]);
    return s;
}

// k (B, Hkv, T, d) -> (B, Hkv*g, T, d): each kv head repeated g times in a row
// (torch.repeat_interleave(k, g, dim=1)), what enable_gqa means.
Tensor repeat_heads(const Tensor& k, int64_t g) {
    const int64_t B = k.dim(0), Hkv = k.dim(1), T = k.dim(2), d = k.dim(3);
    Tensor out(Shape{B, Hkv * g, T, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hkv * g; ++h)
            std::copy_n(k.ptr() + ((b * Hkv + h / g) * T) * d, T * d, out.ptr() + ((b * Hkv * g + h) * T) * d);
    return out;
}

// Rows [t0, t0 + n) of every (b, h) of x (B, H, T, d).
Tensor rows(const Tensor& x, int64_t t0, int64_t n) {
    const int64_t BH = x.dim(0) * x.dim(1), T = x.dim(2), d = x.dim(3);
    Tensor out(Shape{x.dim(0), x.dim(1), n, d});
    for (int64_t s = 0; s < BH; ++s) std::copy_n(x.ptr() + (s * T + t0) * d, n * d, out.ptr() + s * n * d);
    return out;
}

double max_v(const Tensor& v) {
    double m = 0;
    for (float x : v.data) m = std::max(m, double(std::fabs(x)));
    return m;
}

// Worst |got - ref| / (|ref| + max|v|): an output element is a weighted mean of v, so its
// error is bounded relative to max|v| (as tests/test_flash.cpp).
double worst_scaled(const Tensor& got, const Tensor& ref, const Tensor& v) {
    const double vm = max_v(v);
    double w = 0;
    for (int64_t n = 0; n < got.numel(); ++n) {
        const double e = std::fabs(double(got.data[n]) - ref.data[n]) / (std::fabs(double(ref.data[n])) + vm);
        w = std::max(w, std::isnan(e) ? INFINITY : e);
    }
    return w;
}

}  // namespace

TEST_CASE("alibi_slopes are the paper's: geometric for powers of two, interleaved otherwise") {
    for (int64_t H : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20}) {
        const std::vector<double> got = alibi_slopes(H), want = paper_slopes(H);
        REQUIRE(got.size() == want.size());
        for (size_t h = 0; h < got.size(); ++h) {
            INFO("H = " << H << ", head " << h);
            CHECK(got[h] == doctest::Approx(want[h]).epsilon(1e-12));
        }
    }
    // H = 8: 1/2, 1/4, ..., 1/256 (the paper's example)
    const std::vector<double> s8 = alibi_slopes(8);
    CHECK(s8.front() == 0.5);
    CHECK(s8.back() == 1.0 / 256);
}

TEST_CASE("grouped-query attention equals attention with each kv head repeated g times") {
    // reference and flash, H_q = 6 over H_kv = 2 (g = 3) and MQA (H_kv = 1), causal and not
    for (int64_t Hkv : {1, 2, 3}) {
        const Tensor q = randn({2, 6, 9, 8}, 1), k = randn({2, Hkv, 11, 8}, 2), v = randn({2, Hkv, 11, 5}, 3);
        const Tensor kr = repeat_heads(k, 6 / Hkv), vr = repeat_heads(v, 6 / Hkv);
        for (const Mask& mask : {Mask::none(), Mask::key_padding({11, 4})}) {
            AttentionOptions opt;
            const Tensor want = attention_reference(q, kr, vr, mask, opt);
            const Tensor got = attention_reference(q, k, v, mask, opt);
            INFO("H_kv = " << Hkv << ", mask " << mask.describe());
            CHECK(max_abs_diff(got, want) == 0.0);  // the same arithmetic on the same rows
            CHECK(worst_scaled(attention_flash(q, k, v, mask, opt, 2), want, v) <= 1e-5);
        }
    }
}

TEST_CASE("check_attention_inputs refuses shapes and values the score options cannot use") {
    const Tensor q = randn({1, 6, 4, 8}, 1), k4 = randn({1, 4, 4, 8}, 2), v4 = randn({1, 4, 4, 8}, 3);
    AttentionOptions opt;
    CHECK_THROWS_AS(check_attention_inputs(q, k4, v4, Mask::none(), opt), ShapeError);  // 6 heads over 4
    try {
        check_attention_inputs(q, k4, v4, Mask::none(), opt);
    } catch (const ShapeError& e) {
        CHECK(std::string(e.what()).find("not a multiple") != std::string::npos);
    }
    const Tensor qo = randn({1, 2, 4, 7}, 1), ko = randn({1, 2, 4, 7}, 2), vo = randn({1, 2, 4, 7}, 3);
    opt.rope = true;
    CHECK_THROWS_AS(check_attention_inputs(qo, ko, vo, Mask::none(), opt), ShapeError);  // odd Dk
    opt = AttentionOptions{};
    opt.rope = true;
    opt.rope_base = 1.0f;
    CHECK_THROWS_AS(attention_reference(q, q, q, Mask::none(), opt), InputError);
    opt = AttentionOptions{};
    opt.softcap = -1.0f;
    CHECK_THROWS_AS(attention_reference(q, q, q, Mask::none(), opt), InputError);
    opt.softcap = INFINITY;
    CHECK_THROWS_AS(attention_flash(q, q, q, Mask::none(), opt), InputError);
    opt = AttentionOptions{};
    opt.query_offset = -1;
    CHECK_THROWS_AS(attention_reference(q, q, q, Mask::none(), opt), InputError);
}

TEST_CASE("RoPE: the score of (q at i, k at j) depends only on i - j") {
    // every query row is the same vector, every key row another: without RoPE all scores
    // are equal; with it score(i, j) is a function of i - j alone
    const int64_t T = 12, D = 16;
    const Tensor q1 = randn({1, 1, 1, D}, 5), k1 = randn({1, 1, 1, D}, 6);
    Tensor q(Shape{1, 1, T, D}), k(Shape{1, 1, T, D});
    for (int64_t t = 0; t < T; ++t) {
        std::copy_n(q1.ptr(), D, q.ptr() + t * D);
        std::copy_n(k1.ptr(), D, k.ptr() + t * D);
    }
    AttentionOptions opt;
    opt.rope = true;
    AttentionRecord rec;
    attention_reference(q, k, k, Mask::none(), opt, &rec);
    double spread = 0, range = 0;
    for (int64_t delta = -(T - 1); delta <= T - 1; ++delta) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < T; ++i) {
            const int64_t j = i - delta;
            if (j < 0 || j >= T) continue;
            const double s = rec.scores_raw.at({0, 0, i, j});
            lo = std::min(lo, s);
            hi = std::max(hi, s);
        }
        spread = std::max(spread, hi - lo);
        range = std::max(range, std::fabs(hi));
    }
    // float32 rounding of sin/cos and a 16-term dot product of numbers ~1: ~1e-6 of the scores' size
    CHECK(spread <= 1e-5 * range);
    // and it does depend on i - j: scores at different offsets differ
    CHECK(std::fabs(rec.scores_raw.at({0, 0, 5, 5}) - rec.scores_raw.at({0, 0, 5, 2})) > 1e-3);
    // rotation keeps norms and position 0 is not rotated
    std::vector<double> x(q.data.begin(), q.data.end());
    rope_rotate(x.data(), 1, T, D, 0, 10000.0);
    for (int64_t t = 0; t < T; ++t) {
        double n0 = 0, n1 = 0;
        for (int64_t d = 0; d < D; ++d) {
            n0 += double(q.data[t * D + d]) * q.data[t * D + d];
            n1 += x[t * D + d] * x[t * D + d];
        }
        CHECK(n1 == doctest::Approx(n0).epsilon(1e-12));
    }
    for (int64_t d = 0; d < D; ++d) CHECK(x[d] == double(q.data[d]));
    // rotate-half pairs (c, c + D/2) by pos·base^(-2c/D): position 1, pair 0 turns by 1 radian
    CHECK(x[D] == doctest::Approx(q.data[0] * std::cos(1.0) - q.data[D / 2] * std::sin(1.0)).epsilon(1e-12));
}

TEST_CASE("softcap and ALiBi change the scaled scores exactly as defined") {
    const int64_t H = 4, T = 7, D = 8;
    const Tensor q = randn({2, H, T, D}, 11), k = randn({2, H, T, D}, 12), v = randn({2, H, T, D}, 13);
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 3.0f};  // large scores, so the cap bites
    opt.softcap = 5.0f;
    opt.alibi = true;
    opt.query_offset = 3;
    AttentionRecord rec;
    attention_reference(q, k, v, Mask::make_causal(), opt, &rec);
    const std::vector<double> m = alibi_slopes(H);
    double worst = 0, capped = 0;
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < T; ++j) {
                    const double raw = rec.scores_raw.at({b, h, i, j});
                    const double want = 5.0 * std::tanh(raw * 3.0 / 5.0) - m[h] * std::fabs(double(3 + i - j));
                    worst = std::max(worst, std::fabs(rec.scores_scaled.at({b, h, i, j}) - want));
                    capped = std::max(capped, std::fabs(raw * 3.0));
                }
    CHECK(capped > 5.0);     // some scores would have exceeded the cap
    CHECK(worst <= 2e-5);    // float32 rounding of values up to ~|5| + 4·0.25·9
}

TEST_CASE("a query offset: the last queries alone give the last rows of the full pass") {
    // what a KV cache does: queries t0.. at positions t0.., all keys; RoPE and ALiBi both
    // depend on positions, so the offset must reproduce the full pass's rows exactly
    const Tensor q = randn({1, 4, 10, 8}, 21), k = randn({1, 2, 10, 8}, 22), v = randn({1, 2, 10, 6}, 23);
    AttentionOptions opt;
    opt.rope = true;
    opt.alibi = true;
    opt.softcap = 2.0f;
    const Tensor full = attention_reference(q, k, v, Mask::none(), opt);
    for (int64_t t0 : {0, 6, 9}) {
        AttentionOptions o = opt;
        o.query_offset = t0;
        const Tensor part = attention_reference(rows(q, t0, 10 - t0), k, v, Mask::none(), o);
        INFO("t0 = " << t0);
        CHECK(max_abs_diff(part, rows(full, t0, 10 - t0)) <= 1e-6);
        CHECK(worst_scaled(attention_flash(rows(q, t0, 10 - t0), k, v, Mask::none(), o, 2), rows(full, t0, 10 - t0),
                           v) <= 1e-5);
    }
}

TEST_CASE("flash matches the reference with every score option, for every kernel") {
    // Tolerance 2e-6 of (|ref| + max|v|) (tests/test_flash.cpp's measure): RoPE is the
    // same rotation (rope_rotate) applied before either; softcap's tanh and ALiBi's bias
    // are taken in log2 units in float, a few ulps more per score. Measured worst over
    // the grid and every kernel: 2.8e-7 (AVX-512 machine), so a 7x margin.
    struct Opts {
        const char* name;
        bool rope, alibi;
        float cap;
        int64_t offset;
    };
    const std::vector<Opts> opts = {{"rope", true, false, 0, 0},
                                    {"alibi", false, true, 0, 0},
                                    {"softcap", false, false, 1.5f, 0},
                                    {"rope+alibi+softcap", true, true, 4.0f, 0},
                                    {"rope base 500, offset 7", true, false, 0, 7},
                                    {"alibi, offset 3", false, true, 0, 3}};
    struct Shape6 {
        int64_t B, H, Hkv, Tq, Tk, Dk, Dv;
    };
    const std::vector<Shape6> shapes = {{1, 1, 1, 1, 1, 2, 3},     {2, 6, 3, 7, 9, 8, 5},
                                        {1, 8, 2, 65, 65, 64, 64}, {1, 4, 1, 100, 37, 16, 24},
                                        {2, 5, 5, 33, 130, 32, 8}, {1, 2, 1, 129, 200, 18, 33}};
    double worst_all = 0;
    for (const std::string& kern : flash_kernels())
        for (const Opts& o : opts)
            for (const Shape6& s : shapes)
                for (int mk = 0; mk < 3; ++mk) {
                    const Tensor q = randn({s.B, s.H, s.Tq, s.Dk}, 31), k = randn({s.B, s.Hkv, s.Tk, s.Dk}, 32),
                                 v = randn({s.B, s.Hkv, s.Tk, s.Dv}, 33);
                    const Mask mask = mk == 0 ? Mask::none()
                                      : mk == 1 ? Mask::make_causal()
                                                : Mask::make_causal().combined(Mask::key_padding(
                                                      std::vector<int64_t>(static_cast<size_t>(s.B), (s.Tk + 1) / 2)));
                    AttentionOptions opt;
                    opt.rope = o.rope;
                    if (o.offset == 7) opt.rope_base = 500.0f;
                    opt.alibi = o.alibi;
                    opt.softcap = o.cap;
                    opt.query_offset = o.offset;
                    if (mk == 2) opt.fill = -1e9f;
                    const Tensor ref = attention_reference(q, k, v, mask, opt);
                    const Tensor got = attention_flash_with(kern, q, k, v, mask, opt, 2);
                    const double w = worst_scaled(got, ref, v);
                    worst_all = std::max(worst_all, w);
                    INFO(kern << ", " << o.name << ", B " << s.B << " H " << s.H << "/" << s.Hkv << " Tq " << s.Tq
                              << " Tk " << s.Tk << " Dk " << s.Dk << " Dv " << s.Dv << ", mask " << mask.describe());
                    CHECK(w <= 2e-6);
                }
    MESSAGE("worst scaled error over the grid: " << worst_all);
}

TEST_CASE("implementations without the score options refuse them in one line") {
    const Tensor q = randn({1, 4, 5, 8}, 41), k = randn({1, 2, 5, 8}, 42), v = randn({1, 2, 5, 8}, 43);
    const Tensor k4 = randn({1, 4, 5, 8}, 42), v4 = randn({1, 4, 5, 8}, 43);
    AttentionOptions opt;
    // grouped heads: the tiled backward and flash-bf16 refuse (the reference backward has them)
    CHECK_THROWS_AS(attention_flash_backward(q, k, v, Mask::none(), opt, randn({1, 4, 5, 8}, 44)), InputError);
    CHECK_NOTHROW(attention_backward_reference(q, k, v, Mask::none(), opt, randn({1, 4, 5, 8}, 44)));
    for (bool rope : {false, true}) {
        opt.rope = rope;
        opt.softcap = rope ? 0.0f : 3.0f;
        CHECK_THROWS_AS(attention_flash_backward(q, k4, v4, Mask::none(), opt, randn({1, 4, 5, 8}, 44)), InputError);
        if (flash_bf16_supported()) CHECK_THROWS_AS(attention_flash_bf16(q, k4, v4, Mask::none(), opt), InputError);
        // the backend table: every row without score_options refuses, naming the rows that can
        for (const BackendInfo& row : backends()) {
            if (row.score_options || !backend_available(row.id)) continue;
            try {
                attention(row.id, q, k4, v4, Mask::none(), opt);
                FAIL("no refusal from " << row.name);
            } catch (const InputError& e) {
                const std::string w = e.what();
                CHECK(w.find("does not implement") != std::string::npos);
                CHECK(w.find("reference, flash") != std::string::npos);
            }
        }
    }
    CHECK(score_option_backend_names() == "reference, flash");
    opt = AttentionOptions{};
    CHECK(score_features(q, k4, opt).empty());
    CHECK(score_features(q, k, opt) == "grouped-query heads (H_q 4, H_kv 2)");
}

namespace {

std::vector<double> randn_d(size_t n, uint64_t seed) {
    Rng r(seed, 7);
    std::vector<double> v(n);
    for (auto& x : v) x = r.normal_double();
    return v;
}

double dotd(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// |central differences - analytic| <= 1e-6 |analytic| + 1e-8 (as tests/test_backward.cpp: step 1e-5 in double).
void check_grad(const char* what, std::vector<double>& theta, const std::function<double()>& loss,
                const std::vector<double>& g) {
    std::vector<double> d(g.size());
    for (size_t i = 0; i < theta.size(); ++i) {
        const double keep = theta[i];
        theta[i] = keep + 1e-5;
        const double up = loss();
        theta[i] = keep - 1e-5;
        const double down = loss();
        theta[i] = keep;
        d[i] = (up - down) / 2e-5 - g[i];
    }
    const double err = std::sqrt(dotd(d, d)), ref = std::sqrt(dotd(g, g));
    INFO(what << ": |fd - analytic| = " << err << ", |analytic| = " << ref);
    CHECK(ref > 0.0);
    CHECK(err <= 1e-6 * ref + 1e-8);
}

}  // namespace

TEST_CASE("the reference backward with the score options matches finite differences in double") {
    struct C {
        const char* name;
        int64_t H, Hkv;
        bool rope, alibi, cosine;
        float cap;
        int64_t offset;
    };
    const std::vector<C> cases = {{"GQA 4/2", 4, 2, false, false, false, 0, 0},
                                  {"MQA 3/1", 3, 1, false, false, false, 0, 0},
                                  {"RoPE", 2, 2, true, false, false, 0, 0},
                                  {"RoPE + cosine, offset 2", 2, 2, true, false, true, 0, 2},
                                  {"ALiBi", 2, 2, false, true, false, 0, 0},
                                  {"softcap 0.7", 2, 2, false, false, false, 0.7f, 0},
                                  {"all, GQA 4/2, offset 1", 4, 2, true, true, false, 1.5f, 1}};
    for (const C& c : cases) {
        SUBCASE(c.name) {
            const AttentionSizes n{2, c.H, 3, 5, 4, 3, c.Hkv};
            AttentionOptions opt;
            opt.rope = c.rope;
            opt.rope_base = 100.0f;  // turns fast enough to matter over 5 positions
            opt.alibi = c.alibi;
            opt.softcap = c.cap;
            opt.query_offset = c.offset;
            if (c.cosine) opt.scale = Scale{ScaleKind::Cosine, 0.5f};
            const Mask mask = Mask::key_padding({5, 3});
            std::vector<double> q = randn_d(size_t(n.B * n.H * n.Tq * n.Dk), 1),
                                k = randn_d(size_t(n.B * n.Hkv * n.Tk * n.Dk), 2),
                                v = randn_d(size_t(n.B * n.Hkv * n.Tk * n.Dv), 3);
            const std::vector<double> dout = randn_d(size_t(n.B * n.H * n.Tq * n.Dv), 4);
            std::vector<double> out(dout.size());
            auto loss = [&] {
                attention_reference(out.data(), q.data(), k.data(), v.data(), n, mask, opt);
                return dotd(out, dout);
            };
            std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
            attention_backward_reference(dq.data(), dk.data(), dv.data(), q.data(), k.data(), v.data(), dout.data(), n,
                                         mask, opt);
            check_grad("dq", q, loss, dq);
            check_grad("dk", k, loss, dk);
            check_grad("dv", v, loss, dv);
        }
    }
}

TEST_CASE("attn forward: --kv-heads, --rope, --alibi, --softcap: shapes traced, options dumped, errors named") {
    using attn::test::run_attn;
    // GQA: K and V carry the kv heads, the output keeps its shape
    auto r = run_attn("forward --heads 4 --kv-heads 2 --d-model 16 --trace");
    REQUIRE(r.code == 0);
    CHECK(r.out.find("H=4 H_kv=2") != std::string::npos);
    CHECK(r.out.find("K.view(B, T, H_kv, Dk).transpose(1, 2)") != std::string::npos);
    CHECK(r.out.find("[2, 2, 6, 4]") != std::string::npos);  // K_heads (B, H_kv, T, Dk)
    CHECK(r.out.find("[2, 4, 6, 6]") != std::string::npos);  // scores (B, H, T, T)
    r = run_attn("forward --heads 4 --kv-heads 1 --rope --alibi --softcap 3 --trace");
    REQUIRE(r.code == 0);
    CHECK(r.out.find("rope=10000 alibi softcap=3") != std::string::npos);
    CHECK(r.out.find("RoPE(Q)·RoPE(K)ᵀ") != std::string::npos);
    CHECK(r.out.find("3·tanh(scores · scale / 3) − m_h·|i − j|") != std::string::npos);
    CHECK(run_attn("forward --heads 4 --kv-heads 2 --rope 500 --alibi --impl flash").code == 0);
    CHECK(run_attn("forward --heads 4 --kv-heads 2 --rope --softcap 2 --backward").code == 0);

    // refusals: one line naming the option, exit 2
    struct Bad {
        const char* args;
        const char* says;
    };
    for (const Bad& b :
         {Bad{"--heads 4 --kv-heads 3", "--kv-heads: must divide --heads 4"},
          Bad{"--heads 2 --kv-heads 4", "--kv-heads: must divide"}, Bad{"--kv-heads 0", "--kv-heads"},
          Bad{"--rope abc", "--rope: the base must be a number > 1"},
          Bad{"--rope 1", "--rope: the base must be a number > 1"},
          Bad{"--rope --d-k 5", "--rope: rotates pairs of dims"},
          Bad{"--softcap 0", "--softcap: must be a number in (0, 1e30]"}, Bad{"--softcap -2", "--softcap"},
          Bad{"--heads 2 --kv-heads 1 --backward --impl flash",
              "--backward: flash's backward pass does not implement"}}) {
        const auto res = run_attn(std::string("forward ") + b.args);
        INFO(b.args << " -> " << res.out);
        CHECK(res.code == 2);
        CHECK(res.out.find(b.says) != std::string::npos);
    }
    if (backend_available(Backend::FlashBf16)) {
        const auto res = run_attn("forward --alibi --impl flash-bf16");
        INFO(res.out);
        CHECK(res.code == 2);
        CHECK(res.out.find("--impl flash-bf16: does not implement ALiBi; use --impl reference, flash") !=
              std::string::npos);
    }

    // the dump records the options and the new tensors, and --input runs the same layer again
    const std::string dir = attn::test::temp_dir("score-options");
    const std::string f1 = dir + "/a.json", f2 = dir + "/b.json";
    REQUIRE(run_attn("forward --heads 4 --kv-heads 2 --rope 500 --alibi --softcap 3 --mask causal --dump " + f1).code ==
            0);
    const Dump d = read_dump_file(f1);
    CHECK(d.config.at("kv_heads") == 2);
    CHECK(d.config.at("rope") == 500.0);
    CHECK(d.config.at("alibi") == true);
    CHECK(d.config.at("softcap") == 3.0);
    CHECK(d.tensors.at("W_k").shape == Shape{8, 16});
    CHECK(d.tensors.at("K").shape == Shape{2, 2, 6, 4});
    CHECK(d.tensors.at("Q_rope").shape == Shape{2, 4, 6, 4});
    CHECK(d.tensors.at("K_rope").shape == Shape{2, 2, 6, 4});
    CHECK(d.tensors.at("alibi_slopes").shape == Shape{4});
    CHECK(d.tensors.at("alibi_slopes").data[0] == 0.25f);  // 2^(-8/4)
    const auto again = run_attn("forward --input " + f1 + " --dump " + f2);
    INFO(again.out);
    REQUIRE(again.code == 0);
    CHECK(max_abs_diff(read_dump_file(f2).tensors.at("out"), d.tensors.at("out")) == 0.0);
    const auto clash = run_attn("forward --input " + f1 + " --softcap 5");
    CHECK(clash.code == 2);
    CHECK(clash.out.find("--softcap 5 conflicts with") != std::string::npos);
    std::filesystem::remove_all(dir);
}
