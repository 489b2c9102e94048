// Backward passes checked against central finite differences in double precision:
// attention (every mask kind, every scale, dropout, Dk != Dv, Tq != Tk, B, H > 1),
// Linear, split/merge, and multi-head attention end to end (x and every weight).
// Then the float path against the double path.
//
// The finite-difference bound. Each check differentiates the scalar
// L = Σ out ∘ dout (dout fixed, N(0,1)) by central differences,
//   g_fd = (L(θ + h) − L(θ − h)) / 2h,   h = 1e-5,
// whose error is the truncation h²/6·|L'''| plus rounding ≈ ε·|L| / h. With inputs
// and weights O(1), L and its third derivatives are O(10) at these sizes, so the
// truncation is ≈ 1e-10·10/6 ≈ 2e-10 and the rounding ≈ 1e-16·10/1e-5 = 1e-10 per
// entry: ≈ 3e-10 per entry, under 1e-8 over the norm of a few hundred entries.
// We assert |g_fd − g|₂ ≤ 1e-6·|g|₂ (|g|₂ is O(1) to O(10) here): two orders above
// the expected error, and far below what a wrong formula gives (an error of a
// single term is O(|g|)). Plus an absolute 1e-8 (the per-entry error above over a
// few hundred entries) for gradients that are zero in exact arithmetic: db_k is
// one (softmax ignores a constant added to a whole row of scores, and q·b_k is one).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "finite_diff.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

constexpr double kH = 1e-5;
constexpr double kFdRel = 1e-6;
constexpr double kFdAbs = 1e-8;

std::vector<double> randn_d(size_t n, uint64_t seed, uint64_t stream, double scale = 1.0) {
    Rng r(seed, stream);
    std::vector<double> v(n);
    for (auto& x : v) x = r.normal_double() * scale;
    return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

double norm(const std::vector<double>& a) { return std::sqrt(dot(a, a)); }

// Central differences of loss() with respect to every entry of theta (modified in place and restored).
std::vector<double> finite_diff(std::vector<double>& theta, const std::function<double()>& loss) {
    std::vector<double> g(theta.size());
    for (size_t i = 0; i < theta.size(); ++i) {
        const double keep = theta[i];
        theta[i] = keep + kH;
        const double up = loss();
        theta[i] = keep - kH;
        const double down = loss();
        theta[i] = keep;
        g[i] = (up - down) / (2 * kH);
    }
    return g;
}

// |fd − g| ≤ kFdRel·|g| + kFdAbs.
void check_fd(const std::string& what, const std::vector<double>& fd, const std::vector<double>& g) {
    REQUIRE(fd.size() == g.size());
    std::vector<double> d(g.size());
    for (size_t i = 0; i < g.size(); ++i) d[i] = fd[i] - g[i];
    const double err = norm(d), ref = norm(g);
    INFO(what << ": |fd - analytic| = " << err << ", |analytic| = " << ref);
    CHECK(err <= kFdRel * ref + kFdAbs);
}

struct AttnCase {
    std::string name;
    AttentionSizes n;
    Mask mask;
    AttentionOptions opt;
};

AttentionOptions opts(Scale s, float fill = -INFINITY, float p = 0.0f) {
    AttentionOptions o;
    o.scale = s;
    o.fill = fill;
    o.dropout = p;
    o.train = p > 0.0f;
    o.seed = 11;
    return o;
}

// B = 2, H = 2, Tq = 3, Tk = 4, Dk = 3, Dv = 5 unless a case says otherwise.
std::vector<AttnCase> attention_cases() {
    const AttentionSizes n{2, 2, 3, 4, 3, 5};
    const Scale sqrt_s{}, none{ScaleKind::None, 1.0f}, constant{ScaleKind::Constant, 0.7f},
        cosine{ScaleKind::Cosine, 0.5f};
    std::vector<float> add(2 * 3 * 4);
    {
        Rng r(5);
        for (auto& a : add) a = r.normal();
    }
    // batch row 0, query 1 sees no key: a fully masked row
    std::vector<uint8_t> custom = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1,  //
                                   0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1};
    const Mask custom_m = Mask::custom(2, 3, 4, custom);
    std::vector<AttnCase> cs;
    cs.push_back({"no mask, sqrt", n, Mask::none(), opts(sqrt_s)});
    cs.push_back({"scale none", n, Mask::none(), opts(none)});
    cs.push_back({"scale constant 0.7", n, Mask::none(), opts(constant)});
    cs.push_back({"scale cosine:0.5", n, Mask::none(), opts(cosine)});
    cs.push_back({"causal", n, Mask::make_causal(), opts(sqrt_s)});
    cs.push_back({"key padding 4,2", n, Mask::key_padding({4, 2}), opts(sqrt_s)});
    cs.push_back({"custom bool, a fully masked row, fill -inf", n, custom_m, opts(sqrt_s)});
    cs.push_back({"custom bool, a fully masked row, fill -1e9", n, custom_m, opts(sqrt_s, -1e9f)});
    cs.push_back({"custom bool, fill -5 (finite, masked keys keep weight)", n, custom_m, opts(sqrt_s, -5.0f)});
    cs.push_back({"additive", n, Mask::additive_mask(2, 3, 4, add), opts(sqrt_s)});
    cs.push_back({"causal + padding + additive", n,
                  Mask::make_causal().combined(Mask::key_padding({3, 4})).combined(Mask::additive_mask(2, 3, 4, add)),
                  opts(sqrt_s)});
    cs.push_back({"dropout 0.3 train", n, Mask::none(), opts(sqrt_s, -INFINITY, 0.3f)});
    cs.push_back({"dropout 0.5 + causal + cosine", n, Mask::make_causal(), opts(cosine, -INFINITY, 0.5f)});
    cs.push_back({"H = 3, Tq = Tk = 5, Dk = 2, Dv = 4, causal", AttentionSizes{1, 3, 5, 5, 2, 4}, Mask::make_causal(),
                  opts(constant)});
    return cs;
}

}  // namespace

TEST_CASE("backward: attention matches central finite differences in double") {
    for (const AttnCase& c : attention_cases()) {
        SUBCASE(c.name.c_str()) {
            const auto& n = c.n;
            std::vector<double> q = randn_d(size_t(n.B * n.H * n.Tq * n.Dk), 1, 0);
            std::vector<double> k = randn_d(size_t(n.B * n.H * n.Tk * n.Dk), 1, 1);
            std::vector<double> v = randn_d(size_t(n.B * n.H * n.Tk * n.Dv), 1, 2);
            const std::vector<double> dout = randn_d(size_t(n.B * n.H * n.Tq * n.Dv), 1, 3);
            std::vector<double> out(dout.size());
            auto loss = [&] {
                attention_reference(out.data(), q.data(), k.data(), v.data(), n, c.mask, c.opt);
                return dot(out, dout);
            };
            std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
            AttentionBackwardSteps<double> steps;
            attention_backward_reference(dq.data(), dk.data(), dv.data(), q.data(), k.data(), v.data(), dout.data(), n,
                                         c.mask, c.opt, &steps);
            check_fd("dq", finite_diff(q, loss), dq);
            check_fd("dk", finite_diff(k, loss), dk);
            check_fd("dv", finite_diff(v, loss), dv);
            // masked positions get exactly zero score gradient
            for (int64_t b = 0; b < n.B; ++b) {
                const MaskRow row = c.mask.row(b, n.Tk);
                for (int64_t h = 0; h < n.H; ++h)
                    for (int64_t i = 0; i < n.Tq; ++i)
                        for (int64_t j = 0; j < n.Tk; ++j)
                            if (!row.allowed(i, j))
                                CHECK(steps.d_scores[size_t(((b * n.H + h) * n.Tq + i) * n.Tk + j)] == 0.0);
            }
        }
    }
}

TEST_CASE("backward: a fully masked row with fill -inf gives exactly zero gradients") {
    // batch row 0, query 1 masked everywhere: its dq row is 0, and it sends nothing to dk, dv
    const AttentionSizes n{1, 1, 3, 4, 3, 2};
    const Mask m = Mask::custom(1, 3, 4, {1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1});
    const Tensor q = test::randn({1, 1, 3, 3}, 2, 0), k = test::randn({1, 1, 4, 3}, 2, 1),
                 v = test::randn({1, 1, 4, 2}, 2, 2);
    Tensor dout = test::randn({1, 1, 3, 2}, 2, 3);
    const AttentionGrads g = attention_backward_reference(q, k, v, m, opts(Scale{}), dout);
    for (int64_t c = 0; c < 3; ++c) CHECK(g.dq.at({0, 0, 1, c}) == 0.0f);
    // zero every other query's upstream gradient: then every gradient is exactly 0
    for (int64_t i : {0, 2})
        for (int64_t c = 0; c < 2; ++c) dout.at({0, 0, i, c}) = 0.0f;
    const AttentionGrads g1 = attention_backward_reference(q, k, v, m, opts(Scale{}), dout);
    for (const Tensor* t : {&g1.dq, &g1.dk, &g1.dv})
        for (float x : t->data) CHECK(x == 0.0f);
    (void)n;
}

TEST_CASE("backward: cosine's eps branch (|q| <= 1e-12) divides by eps, as F.normalize does") {
    // One query row with norm ~1e-14: q̂ = q/eps, linear in q. Differences with h far below
    // the row's size stay in that branch; the other rows are O(1) and use the |q| branch.
    const AttentionSizes n{1, 1, 2, 3, 3, 2};
    std::vector<double> q = randn_d(6, 3, 0), k = randn_d(9, 3, 1), v = randn_d(6, 3, 2);
    const std::vector<double> dout = randn_d(4, 3, 3);
    for (int c = 0; c < 3; ++c) q[size_t(c)] *= 1e-14;
    const AttentionOptions o = opts(Scale{ScaleKind::Cosine, 1.0f});
    std::vector<double> out(4), dq(6), dk(9), dv(6);
    attention_backward_reference(dq.data(), dk.data(), dv.data(), q.data(), k.data(), v.data(), dout.data(), n,
                                 Mask::none(), o);
    // the tiny row's gradient, by differences with h = 1e-17 (relative 1e-3 of its entries)
    for (int c = 0; c < 3; ++c) {
        const double fd = test::central_difference(
            q[size_t(c)],
            [&] {
                attention_reference(out.data(), q.data(), k.data(), v.data(), n, Mask::none(), o);
                return dot(out, dout);
            },
            1e-17);
        INFO("component " << c << ": fd " << fd << ", analytic " << dq[size_t(c)]);
        // q̂ is linear here, so the only error is rounding: ε·|L|/h ≈ 1e-16·1/1e-17·... relative 1e-6 of ~1e12
        CHECK(std::abs(fd - dq[size_t(c)]) <= 1e-6 * std::abs(dq[size_t(c)]) + 1e-3);
        CHECK(std::abs(dq[size_t(c)]) > 1e6);  // 1/eps scale: the branch really was taken
    }
}

TEST_CASE("backward: float attention agrees with the double path") {
    // Float32 (ε = 6e-8) through a few matrix products and a softmax over Tk <= 5 terms:
    // the relative error of each gradient is a few ε·(chain length); 1e-5 norm-wise
    // leaves a factor ~10 over what we measure (~1e-6).
    for (const AttnCase& c : attention_cases()) {
        SUBCASE(c.name.c_str()) {
            const auto& n = c.n;
            const Tensor q = test::randn({n.B, n.H, n.Tq, n.Dk}, 4, 0), k = test::randn({n.B, n.H, n.Tk, n.Dk}, 4, 1),
                         v = test::randn({n.B, n.H, n.Tk, n.Dv}, 4, 2),
                         dout = test::randn({n.B, n.H, n.Tq, n.Dv}, 4, 3);
            const AttentionGrads gf = attention_backward(Backend::Reference, q, k, v, c.mask, c.opt, dout);
            auto to_d = [](const Tensor& t) { return std::vector<double>(t.data.begin(), t.data.end()); };
            std::vector<double> qd = to_d(q), kd = to_d(k), vd = to_d(v), od = to_d(dout);
            std::vector<double> dq(qd.size()), dk(kd.size()), dv(vd.size());
            attention_backward_reference(dq.data(), dk.data(), dv.data(), qd.data(), kd.data(), vd.data(), od.data(), n,
                                         c.mask, c.opt);
            for (auto [name_b, f, d_b] : {std::tuple{"dq", &gf.dq, &dq}, {"dk", &gf.dk, &dk}, {"dv", &gf.dv, &dv}}) {
                const char* name = name_b;  // clang 14: no structured binding inside a doctest macro's lambda
                const auto* d = d_b;
                std::vector<double> diff(d->size());
                for (size_t i = 0; i < diff.size(); ++i) diff[i] = double(f->data[i]) - (*d)[i];
                INFO(name << ": |float - double| = " << norm(diff) << " of " << norm(*d));
                CHECK(norm(diff) <= 1e-5 * norm(*d) + 1e-7);
            }
        }
    }
}

TEST_CASE("backward: attention_backward refuses bad input with the backend's reasons") {
    const Tensor q = test::randn({1, 1, 2, 3}, 1), k = test::randn({1, 1, 2, 3}, 2), v = test::randn({1, 1, 2, 4}, 3);
    CHECK_THROWS_AS(attention_backward(Backend::Reference, q, k, v, Mask::none(), {}, Tensor({1, 1, 2, 3})),
                    ShapeError);
    for (const BackendInfo& row : backends()) {
        if (row.backward != nullptr) continue;
        try {
            attention_backward(row.id, q, k, v, Mask::none(), {}, Tensor({1, 1, 2, 4}));
            FAIL("no error for " << row.name);
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find(std::string(row.name) +
                                             " has no backward pass (backends with one: reference") == 0);
        }
    }
}

// ---- Linear, split/merge

TEST_CASE("backward: Linear matches finite differences and accumulates") {
    const int64_t N = 4, in = 3, out = 5;
    std::vector<double> x = randn_d(N * in, 6, 0), W = randn_d(out * in, 6, 1), b = randn_d(out, 6, 2);
    const std::vector<double> dy = randn_d(N * out, 6, 3);
    std::vector<double> y(N * out);
    auto loss = [&] {
        linear_forward(y.data(), x.data(), W.data(), b.data(), N, in, out);
        return dot(y, dy);
    };
    std::vector<double> dx(x.size()), dW(W.size()), db(b.size());
    linear_backward(dx.data(), dW.data(), db.data(), dy.data(), x.data(), W.data(), N, in, out);
    check_fd("dx", finite_diff(x, loss), dx);
    check_fd("dW", finite_diff(W, loss), dW);
    check_fd("db", finite_diff(b, loss), db);
    // a second call adds the same again (documented: accumulate)
    std::vector<double> dx2 = dx;
    linear_backward(dx2.data(), static_cast<double*>(nullptr), static_cast<double*>(nullptr), dy.data(), x.data(),
                    W.data(), N, in, out);
    for (size_t i = 0; i < dx.size(); ++i) CHECK(dx2[i] == doctest::Approx(2 * dx[i]));
}

TEST_CASE("backward: split and merge are each other's backward") {
    // <split(x), g> = <x, split_backward(g)> for every x, g: the adjoint identity
    const Tensor x = test::randn({2, 5, 12}, 7, 0), g = test::randn({2, 3, 5, 4}, 7, 1);
    const Tensor sx = split_heads(x, 3), bg = split_heads_backward(g);
    REQUIRE(bg.shape == x.shape);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < sx.data.size(); ++i) lhs += double(sx.data[i]) * g.data[i];
    for (size_t i = 0; i < x.data.size(); ++i) rhs += double(x.data[i]) * bg.data[i];
    CHECK(lhs == doctest::Approx(rhs).epsilon(1e-6));
    const Tensor y = test::randn({2, 3, 5, 4}, 7, 2), gy = test::randn({2, 5, 12}, 7, 3);
    const Tensor my = merge_heads(y), bgy = merge_heads_backward(gy, 3);
    REQUIRE(bgy.shape == y.shape);
    lhs = rhs = 0;
    for (size_t i = 0; i < my.data.size(); ++i) lhs += double(my.data[i]) * gy.data[i];
    for (size_t i = 0; i < y.data.size(); ++i) rhs += double(y.data[i]) * bgy.data[i];
    CHECK(lhs == doctest::Approx(rhs).epsilon(1e-6));
    // and the wrong merge is not merge's adjoint (C31)
    const Tensor wrong = merge_heads_wrong(y);
    double lw = 0;
    for (size_t i = 0; i < wrong.data.size(); ++i) lw += double(wrong.data[i]) * gy.data[i];
    CHECK(std::abs(lw - rhs) > 1e-3);
}

// ---- multi-head attention end to end, in double: composed from the templated pieces

namespace {

template <class T>
std::vector<T> split_d(const std::vector<T>& x, int64_t B, int64_t Tn, int64_t H, int64_t d) {
    std::vector<T> y(x.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < Tn; ++t)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t c = 0; c < d; ++c)
                    y[size_t(((b * H + h) * Tn + t) * d + c)] = x[size_t(((b * Tn + t) * H + h) * d + c)];
    return y;
}
template <class T>
std::vector<T> merge_d(const std::vector<T>& y, int64_t B, int64_t Tn, int64_t H, int64_t d) {
    std::vector<T> x(y.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < Tn; ++t)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t c = 0; c < d; ++c)
                    x[size_t(((b * Tn + t) * H + h) * d + c)] = y[size_t(((b * H + h) * Tn + t) * d + c)];
    return x;
}

// Self-attention MHA in double: x (B, T, D); parameters W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o.
struct MhaD {
    int64_t B, T, D, H, Dk, Dv;
    Mask mask;
    AttentionOptions opt;
    std::vector<double> x, Wq, bq, Wk, bk, Wv, bv, Wo, bo;

    AttentionSizes sizes() const { return {B, H, T, T, Dk, Dv}; }
    std::vector<double> forward() const {
        const int64_t N = B * T;
        std::vector<double> Q(size_t(N * H * Dk)), K(Q.size()), V(size_t(N * H * Dv));
        linear_forward(Q.data(), x.data(), Wq.data(), bq.data(), N, D, H * Dk);
        linear_forward(K.data(), x.data(), Wk.data(), bk.data(), N, D, H * Dk);
        linear_forward(V.data(), x.data(), Wv.data(), bv.data(), N, D, H * Dv);
        std::vector<double> ho(V.size());
        attention_reference(ho.data(), split_d(Q, B, T, H, Dk).data(), split_d(K, B, T, H, Dk).data(),
                          split_d(V, B, T, H, Dv).data(), sizes(), mask, opt);
        const std::vector<double> merged = merge_d(ho, B, T, H, Dv);
        std::vector<double> out(size_t(N * D));
        linear_forward(out.data(), merged.data(), Wo.data(), bo.data(), N, H * Dv, D);
        return out;
    }
    // gradients in the order x, Wq, bq, Wk, bk, Wv, bv, Wo, bo
    std::vector<std::vector<double>> backward(const std::vector<double>& dout) const {
        const int64_t N = B * T;
        std::vector<double> Q(size_t(N * H * Dk)), K(Q.size()), V(size_t(N * H * Dv));
        linear_forward(Q.data(), x.data(), Wq.data(), bq.data(), N, D, H * Dk);
        linear_forward(K.data(), x.data(), Wk.data(), bk.data(), N, D, H * Dk);
        linear_forward(V.data(), x.data(), Wv.data(), bv.data(), N, D, H * Dv);
        const auto Qh = split_d(Q, B, T, H, Dk), Kh = split_d(K, B, T, H, Dk), Vh = split_d(V, B, T, H, Dv);
        std::vector<double> ho(V.size());
        attention_reference(ho.data(), Qh.data(), Kh.data(), Vh.data(), sizes(), mask, opt);
        const std::vector<double> merged = merge_d(ho, B, T, H, Dv);
        std::vector<std::vector<double>> g{std::vector<double>(x.size()), std::vector<double>(Wq.size()),
                                           std::vector<double>(bq.size()), std::vector<double>(Wk.size()),
                                           std::vector<double>(bk.size()), std::vector<double>(Wv.size()),
                                           std::vector<double>(bv.size()), std::vector<double>(Wo.size()),
                                           std::vector<double>(bo.size())};
        std::vector<double> dmerged(merged.size());
        linear_backward(dmerged.data(), g[7].data(), g[8].data(), dout.data(), merged.data(), Wo.data(), N, H * Dv, D);
        const auto dho = split_d(dmerged, B, T, H, Dv);
        std::vector<double> dQh(Qh.size()), dKh(Kh.size()), dVh(Vh.size());
        attention_backward_reference(dQh.data(), dKh.data(), dVh.data(), Qh.data(), Kh.data(), Vh.data(), dho.data(),
                                     sizes(), mask, opt);
        const auto dQ = merge_d(dQh, B, T, H, Dk), dK = merge_d(dKh, B, T, H, Dk), dV = merge_d(dVh, B, T, H, Dv);
        linear_backward(g[0].data(), g[1].data(), g[2].data(), dQ.data(), x.data(), Wq.data(), N, D, H * Dk);
        linear_backward(g[0].data(), g[3].data(), g[4].data(), dK.data(), x.data(), Wk.data(), N, D, H * Dk);
        linear_backward(g[0].data(), g[5].data(), g[6].data(), dV.data(), x.data(), Wv.data(), N, D, H * Dv);
        return g;
    }
    std::vector<std::vector<double>*> params() { return {&x, &Wq, &bq, &Wk, &bk, &Wv, &bv, &Wo, &bo}; }
};

const char* const kParamNames[] = {"dx", "dW_q", "db_q", "dW_k", "db_k", "dW_v", "db_v", "dW_o", "db_o"};

MhaD make_mha_d(const MultiHeadAttention& m, const Tensor& x, const Mask& mask, const AttentionOptions& opt) {
    const auto& c = m.config();
    auto d = [](const Tensor& t) { return std::vector<double>(t.data.begin(), t.data.end()); };
    return MhaD{x.dim(0), x.dim(1), c.d_model, c.heads, c.d_k, c.d_v, mask, opt, d(x),
                d(m.q_proj.W), d(m.q_proj.b), d(m.k_proj.W), d(m.k_proj.b), d(m.v_proj.W), d(m.v_proj.b),
                d(m.o_proj.W), d(m.o_proj.b)};
}

struct MhaCase {
    std::string name;
    Mask mask;
    AttentionOptions opt;
};

std::vector<MhaCase> mha_cases() {
    return {{"causal, sqrt", Mask::make_causal(), opts(Scale{})},
            {"padding + dropout 0.25", Mask::key_padding({4, 2}), opts(Scale{}, -INFINITY, 0.25f)},
            {"cosine:0.3, fill -1e9, padding", Mask::key_padding({1, 3}), opts(Scale{ScaleKind::Cosine, 0.3f}, -1e9f)},
            {"scale none", Mask::none(), opts(Scale{ScaleKind::None, 1.0f})}};
}

}  // namespace

TEST_CASE("backward: multi-head attention matches finite differences for x and every weight") {
    // D = 6, H = 2, Dk = 2, Dv = 3, B = 2, T = 4
    for (const MhaCase& c : mha_cases()) {
        SUBCASE(c.name.c_str()) {
            MultiHeadAttention m(MhaConfig{6, 2, 2, 3, true});
            Rng r(8);
            m.init(InitSpec{}, r);
            const Tensor x = test::randn({2, 4, 6}, 9);
            MhaD md = make_mha_d(m, x, c.mask, c.opt);
            const std::vector<double> dout = randn_d(2 * 4 * 6, 9, 1);
            const auto g = md.backward(dout);
            auto loss = [&] { return dot(md.forward(), dout); };
            const auto ps = md.params();
            for (size_t i = 0; i < ps.size(); ++i) check_fd(kParamNames[i], finite_diff(*ps[i], loss), g[i]);
        }
    }
}

TEST_CASE("backward: MultiHeadAttention::backward (float) agrees with the double composition") {
    // Float32 through three projections, the attention and the output projection (D = 6, T = 4):
    // a few ε·(chain length) relative, measured ~1e-6; 1e-5 norm-wise, plus an absolute 1e-6
    // (float rounding of O(1) entries) for db_k, which is 0 in exact arithmetic.
    for (const MhaCase& c : mha_cases()) {
        SUBCASE(c.name.c_str()) {
            MultiHeadAttention m(MhaConfig{6, 2, 2, 3, true});
            Rng r(8);
            m.init(InitSpec{}, r);
            const Tensor x = test::randn({2, 4, 6}, 9);
            const Tensor dout = test::randn({2, 4, 6}, 9, 1);
            ForwardRecord fwd;
            m.forward(x, c.mask, c.opt, &fwd);
            MhaBackwardRecord brec;
            const MhaGrads gf = m.backward(fwd, dout, c.mask, c.opt, &brec);
            const MhaD md = make_mha_d(m, x, c.mask, c.opt);
            const auto gd = md.backward(std::vector<double>(dout.data.begin(), dout.data.end()));
            const Tensor* fl[] = {&gf.dx,   &gf.dW_q, &gf.db_q, &gf.dW_k, &gf.db_k,
                                  &gf.dW_v, &gf.db_v, &gf.dW_o, &gf.db_o};
            for (size_t i = 0; i < 9; ++i) {
                REQUIRE(size_t(fl[i]->numel()) == gd[i].size());
                std::vector<double> diff(gd[i].size());
                for (size_t e = 0; e < diff.size(); ++e) diff[e] = double(fl[i]->data[e]) - gd[i][e];
                INFO(std::string(kParamNames[i]) << ": |float - double| = " << norm(diff) << " of " << norm(gd[i]));
                CHECK(norm(diff) <= 1e-5 * norm(gd[i]) + 1e-6);
            }
            // softmax ignores a constant added to a whole score row, and b_k adds q·b_k to row q:
            // db_k = 0 (not under cosine, where k is normalised after b_k is added)
            if (c.opt.scale.kind != ScaleKind::Cosine) CHECK(norm(gd[4]) <= 1e-12);
            // self-attention: dx is the sum of the three input paths
            for (size_t e = 0; e < gf.dx.data.size(); ++e)
                CHECK(gf.dx.data[e] == doctest::Approx(gf.dquery.data[e] + gf.dkey.data[e] + gf.dvalue.data[e]));
            CHECK(brec.d_head_out.shape == Shape{2, 2, 4, 3});
            CHECK(brec.attn.d_scores.shape == Shape{2, 2, 4, 4});
        }
    }
}

TEST_CASE("backward: cross-attention gives dquery, dkey, dvalue and no dx") {
    MultiHeadAttention m(MhaConfig{4, 2, 0, 0, true});
    Rng r(3);
    m.init(InitSpec{}, r);
    const Tensor q = test::randn({1, 2, 4}, 1), kv = test::randn({1, 5, 4}, 2), val = test::randn({1, 5, 4}, 3);
    ForwardRecord fwd;
    m.forward(q, kv, val, Mask::none(), AttentionOptions{}, &fwd);
    const MhaGrads g = m.backward(fwd, test::randn({1, 2, 4}, 4), Mask::none(), AttentionOptions{});
    CHECK(g.dquery.shape == q.shape);
    CHECK(g.dkey.shape == kv.shape);
    CHECK(g.dvalue.shape == val.shape);
    CHECK(g.dx.empty());
    CHECK_THROWS_AS(m.backward(fwd, Tensor({1, 5, 4}), Mask::none(), AttentionOptions{}), ShapeError);
}
