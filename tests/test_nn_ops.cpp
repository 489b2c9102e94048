// Backward passes of the training ops (attn/nn/ops.hpp) against central finite
// differences in double, and the fast twins (attn/nn/fast_ops.hpp; attention's: the kernel of
// attn/cpu/training_attention.hpp) against the reference ops, element by element.
//
// Finite differences: each op is reduced to a scalar L = sum(out * w) with a fixed random
// w (so dout = w), every input element x_i is moved by +-h, and (L(x+h) - L(x-h)) / 2h is
// compared with the analytic gradient. With h = 1e-5 in double the truncation error is
// O(h^2 * |f'''|) ~ 1e-10 and the rounding error O(eps * |L| / h) ~ 1e-11 * |L|, so a
// bound of 1e-7 + 1e-6 * |analytic| fails only on a wrong formula, never on noise.
// Fast vs reference in double: the same algebra in another summation order, so they agree
// to a few ulps of the sum of |terms| (K <= 256 terms): 1e-12 relative, 1e-12 absolute.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/training_attention.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/nn/ops.hpp"
#include "finite_diff.hpp"

namespace tr = attn::nn;
namespace cpu = attn::cpu;
using Vec = std::vector<double>;

namespace {

Vec randv(size_t n, uint64_t seed, double scale = 1.0) {
    attn::Rng r(seed, 7);
    Vec v(n);
    for (auto& x : v) x = scale * r.normal_double();
    return v;
}

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Checks grad (analytic d loss / d x) against central differences of loss() over x.
void check_fd(const std::string& what, Vec& x, const Vec& grad, const std::function<double()>& loss) {
    REQUIRE(grad.size() == x.size());
    const attn::test::FdReport r = attn::test::check_central_differences(x, grad, loss, 1e-6);
    INFO(what << ": " << r.bad << " of " << x.size() << " elements off, worst |fd - analytic| = " << r.worst);
    CHECK(r.bad == 0);
}

// got (double or float) against ref, element by element: |got - ref| <= tol (1 + |ref|).
template <class G>
void check_close(const std::string& what, const std::vector<G>& got, const Vec& ref, double tol = 1e-12) {
    REQUIRE(got.size() == ref.size());
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - ref[i]);
        if (err > tol + tol * std::fabs(ref[i])) ++bad;
        worst = std::max(worst, err);
    }
    INFO(what << ": " << bad << " elements off, worst " << worst);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("nn ops: embedding backward matches finite differences") {
    const int64_t B = 2, T = 3, D = 4, V = 5, Tmax = 4;
    std::vector<int32_t> tok = {1, 4, 1, 0, 2, 1};  // token 1 three times: its gradient sums
    Vec wte = randv(V * D, 1), pos = randv(Tmax * D, 2), w = randv(B * T * D, 3), out(B * T * D);
    auto loss = [&] {
        tr::embedding_forward(out.data(), tok.data(), wte.data(), pos.data(), B, T, D);
        return dot(out, w);
    };
    Vec dwte(wte.size(), 0.0), dpos(pos.size(), 0.0);
    tr::embedding_backward(dwte.data(), dpos.data(), w.data(), tok.data(), B, T, D);
    check_fd("d wte", wte, dwte, loss);
    check_fd("d pos", pos, dpos, loss);
}

TEST_CASE("nn ops: sinusoidal positions follow Vaswani et al.") {
    const int64_t Tmax = 5, D = 6;
    Vec pe(Tmax * D);
    tr::sinusoidal_positions(pe.data(), Tmax, D);
    for (int64_t t = 0; t < Tmax; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
            const double a = double(t) / std::pow(10000.0, 2.0 * double(i) / double(D));
            CHECK(pe[size_t(t * D + 2 * i)] == doctest::Approx(std::sin(a)).epsilon(1e-15));
            CHECK(pe[size_t(t * D + 2 * i + 1)] == doctest::Approx(std::cos(a)).epsilon(1e-15));
        }
}

TEST_CASE("nn ops: layernorm backward matches finite differences") {
    const int64_t N = 5, D = 7;
    Vec x = randv(N * D, 4, 2.0), wt = randv(D, 5), b = randv(D, 6), w = randv(N * D, 7);
    Vec out(N * D), mean(N), rstd(N);
    for (auto& v : x) v += 0.5;  // a nonzero mean
    auto loss = [&] {
        tr::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), wt.data(), b.data(), N, D);
        return dot(out, w);
    };
    loss();
    Vec dx(x.size(), 0.0), dw(D, 0.0), db(D, 0.0);
    tr::layernorm_backward(dx.data(), dw.data(), db.data(), w.data(), x.data(), wt.data(), mean.data(), rstd.data(), N,
                           D);
    check_fd("dx", x, dx, loss);
    check_fd("d weight", wt, dw, loss);
    check_fd("d bias", b, db, loss);
}

TEST_CASE("nn ops: GELU (tanh) and ReLU backward match finite differences") {
    const int64_t n = 40;
    Vec x = randv(n, 8, 2.0), w = randv(n, 9), out(n);
    for (auto& v : x)
        if (std::fabs(v) < 1e-3) v = 0.5;  // ReLU has no derivative at 0
    for (bool relu : {false, true}) {
        auto loss = [&] {
            if (relu) tr::relu_forward(out.data(), x.data(), n);
            else tr::gelu_forward(out.data(), x.data(), n);
            return dot(out, w);
        };
        Vec dx(n, 0.0);
        if (relu) tr::relu_backward(dx.data(), x.data(), w.data(), n);
        else tr::gelu_backward(dx.data(), x.data(), w.data(), n);
        check_fd(relu ? "relu" : "gelu", x, dx, loss);
    }
    // gelu(1) with approximate='tanh' (0.5 (1 + tanh(sqrt(2/pi) 1.044715)))
    double one = 1.0, g = 0;
    tr::gelu_forward(&g, &one, 1);
    CHECK(g == doctest::Approx(0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * 1.044715))).epsilon(1e-15));
}

TEST_CASE("nn ops: GELU (erf) backward matches finite differences") {
    const int64_t n = 40;
    Vec x = randv(n, 18, 2.0), w = randv(n, 19), out(n);
    auto loss = [&] {
        tr::gelu_erf_forward(out.data(), x.data(), n);
        return dot(out, w);
    };
    Vec dx(n, 0.0);
    tr::gelu_erf_backward(dx.data(), x.data(), w.data(), n);
    check_fd("gelu erf", x, dx, loss);
    // gelu(+-1) = +-Phi(+-1): Phi(1) = 0.8413447460685429, Phi(-1) = 0.15865525393145707
    const double pm[2] = {1.0, -1.0};
    double g[2] = {0, 0};
    tr::gelu_erf_forward(g, pm, 2);
    CHECK(g[0] == doctest::Approx(0.8413447460685429).epsilon(1e-15));
    CHECK(g[1] == doctest::Approx(-0.15865525393145707).epsilon(1e-15));
}

TEST_CASE("nn ops: residual and linear backward match finite differences") {
    const int64_t N = 4, C = 5, OC = 3;
    Vec x = randv(N * C, 10), W = randv(OC * C, 11), b = randv(OC, 12), w = randv(N * OC, 13), out(N * OC);
    auto loss = [&] {
        tr::matmul_forward(out.data(), x.data(), W.data(), b.data(), N, C, OC);
        return dot(out, w);
    };
    Vec dx(x.size(), 0.0), dW(W.size(), 0.0), db(OC, 0.0);
    tr::matmul_backward(dx.data(), dW.data(), db.data(), w.data(), x.data(), W.data(), N, C, OC);
    check_fd("linear dx", x, dx, loss);
    check_fd("linear dW", W, dW, loss);
    check_fd("linear db", b, db, loss);

    Vec a = randv(6, 14), c = randv(6, 15), w2 = randv(6, 16), o2(6);
    auto loss2 = [&] {
        tr::residual_forward(o2.data(), a.data(), c.data(), 6);
        return dot(o2, w2);
    };
    Vec da(6, 0.0), dc(6, 0.0);
    tr::residual_backward(da.data(), dc.data(), w2.data(), 6);
    check_fd("residual da", a, da, loss2);
    check_fd("residual db", c, dc, loss2);
}

TEST_CASE("nn ops: per-head L2 normalisation (cosine scale) matches finite differences") {
    const int64_t N = 3, H = 2, Dd = 4;
    Vec x = randv(N * H * Dd, 17), w = randv(N * H * Dd, 18), out(x.size()), nrm(N * H);
    auto loss = [&] {
        tr::headnorm_forward(out.data(), nrm.data(), x.data(), N, H, Dd);
        return dot(out, w);
    };
    loss();
    Vec dx(x.size(), 0.0);
    tr::headnorm_backward(dx.data(), w.data(), out.data(), nrm.data(), N, H, Dd);
    check_fd("headnorm dx", x, dx, loss);
}

TEST_CASE("nn ops: attention backward matches finite differences") {
    struct Case {
        int64_t B, T, H, Dk, Dv;
        bool causal;
        float p;
        double factor;
    };
    const Case cases[] = {{1, 4, 1, 3, 3, false, 0.0f, 1 / std::sqrt(3.0)},
                          {2, 5, 2, 3, 2, true, 0.0f, 1 / std::sqrt(3.0)},   // Dk != Dv, H > 1, causal
                          {1, 5, 2, 2, 3, true, 0.3f, 0.1},                  // dropout, a constant scale
                          {2, 4, 1, 2, 2, false, 0.5f, 1.0}};
    for (const Case& c : cases) {
        CAPTURE(c.B); CAPTURE(c.T); CAPTURE(c.H); CAPTURE(c.causal); CAPTURE(c.p);
        const int64_t QS = c.H * c.Dk, VS = c.H * c.Dv, N = c.B * c.T;
        Vec q = randv(N * QS, 19), k = randv(N * QS, 20), v = randv(N * VS, 21), w = randv(N * VS, 22);
        Vec out(N * VS), att(c.B * c.H * c.T * c.T);
        const uint64_t seed = 1234;
        auto loss = [&] {
            tr::self_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), c.B, c.T, c.H, c.Dk,
                                       c.Dv, c.factor, c.causal, c.p, seed);
            return dot(out, w);
        };
        loss();
        // masked positions: zero weight
        if (c.causal) CHECK(att[1] == 0.0);
        Vec dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
        tr::self_attention_backward(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), c.B, c.T,
                                    c.H, c.Dk, c.Dv, c.factor, c.causal, c.p, seed);
        check_fd("dq", q, dq, loss);
        check_fd("dk", k, dk, loss);
        check_fd("dv", v, dv, loss);
    }
}

// d loss / d log_tau with factor = exp(-log_tau), from the attention backward's dq alone
// (temperature_backward's identity: the scores are bilinear in q, k), against central
// differences in log_tau; same bound as check_fd.
TEST_CASE("nn ops: the temperature gradient of attention matches finite differences") {
    struct Case {
        int64_t B, T, H, Dk, Dv;
        bool causal;
        float p;
    };
    const Case cases[] = {{1, 4, 1, 3, 3, false, 0.0f}, {2, 5, 2, 3, 2, true, 0.0f}, {1, 5, 2, 2, 3, true, 0.3f}};
    for (const Case& c : cases) {
        CAPTURE(c.T); CAPTURE(c.H); CAPTURE(c.causal); CAPTURE(c.p);
        const int64_t QS = c.H * c.Dk, VS = c.H * c.Dv, N = c.B * c.T;
        Vec q = randv(N * QS, 31), k = randv(N * QS, 32), v = randv(N * VS, 33), w = randv(N * VS, 34);
        Vec out(N * VS), att(c.B * c.H * c.T * c.T);
        Vec log_tau = {std::log(0.7)};
        auto loss = [&] {
            tr::self_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), c.B, c.T, c.H, c.Dk,
                                       c.Dv, std::exp(-log_tau[0]), c.causal, c.p, 99);
            return dot(out, w);
        };
        loss();
        Vec dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
        tr::self_attention_backward(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), c.B, c.T,
                                    c.H, c.Dk, c.Dv, std::exp(-log_tau[0]), c.causal, c.p, 99);
        const Vec g = {tr::temperature_backward(q.data(), dq.data(), N * QS)};
        CHECK(std::fabs(g[0]) > 1e-3);
        check_fd("d log_tau", log_tau, g, loss);
        // the same from dk: the identity holds on either side
        CHECK(tr::temperature_backward(k.data(), dk.data(), N * QS) == doctest::Approx(g[0]).epsilon(1e-10));
    }
}

TEST_CASE("nn ops: self-attention forward is core's reference on the (B, T, H*d) layout, bit for bit") {
    // (B, T, H*d) layout here, (B, H, T, d) there; dropout from the same counter-based mask. The op
    // runs core's reference itself, so only the layout could differ, and it may not.
    const int64_t B = 2, T = 5, H = 2, Dk = 3, Dv = 4;
    for (float p : {0.0f, 0.25f}) {
        attn::Tensor Q({B, H, T, Dk}), K({B, H, T, Dk}), Vt({B, H, T, Dv});
        std::vector<float> q(B * T * H * Dk), k(q.size()), v(B * T * H * Dv), out(v.size()), att(B * H * T * T);
        attn::Rng r(3);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t h = 0; h < H; ++h) {
                    for (int64_t d = 0; d < Dk; ++d) {
                        q[size_t(((b * T + t) * H + h) * Dk + d)] = Q.at({b, h, t, d}) = r.normal();
                        k[size_t(((b * T + t) * H + h) * Dk + d)] = K.at({b, h, t, d}) = r.normal();
                    }
                    for (int64_t d = 0; d < Dv; ++d)
                        v[size_t(((b * T + t) * H + h) * Dv + d)] = Vt.at({b, h, t, d}) = r.normal();
                }
        attn::AttentionOptions opt;
        opt.dropout = p;
        opt.train = p > 0;
        opt.seed = 77;
        const attn::Tensor ref = attn::attention_reference(Q, K, Vt, attn::Mask::make_causal(), opt);
        tr::self_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv,
                                   1.0f / std::sqrt(3.0f), true, p, 77);
        double worst = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t d = 0; d < Dv; ++d)
                        worst = std::max(worst, double(std::fabs(out[size_t(((b * T + t) * H + h) * Dv + d)] -
                                                                 ref.at({b, h, t, d}))));
        CAPTURE(p);
        CHECK(worst == 0.0);
    }
}

TEST_CASE("nn ops: self-attention backward is core's attention_backward_reference on its layout, bit for bit") {
    // This module's op on (B, T, H*d) runs core's reference on (B, H, T, d) with the same
    // dropout mask and adds into zeroed gradients (0 + x == x): equal to the last bit.
    const int64_t B = 2, T = 6, H = 2, Dk = 3, Dv = 4;
    for (float p : {0.0f, 0.3f}) {
        attn::Tensor Q({B, H, T, Dk}), K({B, H, T, Dk}), Vt({B, H, T, Dv}), dO({B, H, T, Dv});
        std::vector<float> q(size_t(B * T * H * Dk)), k(q.size()), v(size_t(B * T * H * Dv)), dout(v.size());
        attn::Rng r(5);
        auto qi = [&](int64_t b, int64_t t, int64_t h, int64_t d, int64_t Dd) {
            return size_t(((b * T + t) * H + h) * Dd + d);
        };
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t h = 0; h < H; ++h) {
                    for (int64_t d = 0; d < Dk; ++d) {
                        q[qi(b, t, h, d, Dk)] = Q.at({b, h, t, d}) = r.normal();
                        k[qi(b, t, h, d, Dk)] = K.at({b, h, t, d}) = r.normal();
                    }
                    for (int64_t d = 0; d < Dv; ++d) {
                        v[qi(b, t, h, d, Dv)] = Vt.at({b, h, t, d}) = r.normal();
                        dout[qi(b, t, h, d, Dv)] = dO.at({b, h, t, d}) = r.normal();
                    }
                }
        attn::AttentionOptions opt;
        opt.dropout = p;
        opt.train = p > 0;
        opt.seed = 31;
        const attn::AttentionGrads ref =
            attn::attention_backward_reference(Q, K, Vt, attn::Mask::make_causal(), opt, dO);
        std::vector<float> out(v.size()), att(size_t(B * H * T * T)), dq(q.size(), 0.0f), dk(k.size(), 0.0f),
            dv(v.size(), 0.0f);
        const float f = 1.0f / std::sqrt(float(Dk));
        tr::self_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv, f, true, p,
                                   31);
        tr::self_attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), B, T, H,
                                    Dk, Dv, f, true, p, 31);
        double worst = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t h = 0; h < H; ++h) {
                    for (int64_t d = 0; d < Dk; ++d) {
                        worst = std::max(worst, double(std::fabs(dq[qi(b, t, h, d, Dk)] - ref.dq.at({b, h, t, d}))));
                        worst = std::max(worst, double(std::fabs(dk[qi(b, t, h, d, Dk)] - ref.dk.at({b, h, t, d}))));
                    }
                    for (int64_t d = 0; d < Dv; ++d)
                        worst = std::max(worst, double(std::fabs(dv[qi(b, t, h, d, Dv)] - ref.dv.at({b, h, t, d}))));
                }
        CAPTURE(p);
        CHECK(worst == 0.0);
    }
}

TEST_CASE("nn ops: cross-entropy backward matches finite differences, ignored targets get nothing") {
    const int64_t N = 5, V = 6;
    std::vector<int32_t> tgt = {2, -1, 0, 5, -1};
    Vec z = randv(N * V, 23, 3.0), probs(N * V), losses(N);
    z[0] = 800;  // a huge logit: log-sum-exp keeps it finite
    auto loss = [&] {
        const int64_t n = tr::crossentropy_forward(losses.data(), probs.data(), z.data(), tgt.data(), N, V);
        double s = 0;
        for (double l : losses) s += l;
        return s / double(n);
    };
    const double l0 = loss();
    CHECK(std::isfinite(l0));
    Vec dz(z.size(), 0.0);
    tr::crossentropy_backward(dz.data(), probs.data(), tgt.data(), 1.0 / 3.0, N, V);
    check_fd("dlogits", z, dz, loss);
    for (int64_t j = 0; j < V; ++j) CHECK(dz[size_t(1 * V + j)] == 0.0);
    CHECK(losses[1] == 0.0);
}

TEST_CASE("nn ops: the fast ops match the reference ops element by element (double)") {
    SUBCASE("linear") {
        for (int64_t N : {1, 63, 130}) {
            const int64_t C = 70, OC = 37;  // not multiples of the chunk sizes
            Vec x = randv(N * C, 30), W = randv(OC * C, 31), b = randv(OC, 32), dout = randv(N * OC, 33);
            Vec o1(N * OC), o2(N * OC);
            tr::matmul_forward(o1.data(), x.data(), W.data(), b.data(), N, C, OC);
            tr::matmul_forward_fast(o2.data(), x.data(), W.data(), b.data(), N, C, OC, 2);
            check_close("linear out", o2, o1);
            Vec dx1(x.size(), 0.5), dW1(W.size(), 0.25), db1(OC, 0.125), dx2 = dx1, dW2 = dW1, db2 = db1;
            tr::matmul_backward(dx1.data(), dW1.data(), db1.data(), dout.data(), x.data(), W.data(), N, C, OC);
            tr::matmul_backward_fast(dx2.data(), dW2.data(), db2.data(), dout.data(), x.data(), W.data(), N, C, OC, 2);
            check_close("linear dx", dx2, dx1);
            check_close("linear dW", dW2, dW1);
            check_close("linear db", db2, db1);
        }
    }
    SUBCASE("layernorm and activations") {
        const int64_t N = 150, D = 24;
        Vec x = randv(N * D, 34), w = randv(D, 35), b = randv(D, 36), dout = randv(N * D, 37);
        Vec o1(N * D), o2(N * D), m1(N), m2(N), r1(N), r2(N);
        tr::layernorm_forward(o1.data(), m1.data(), r1.data(), x.data(), w.data(), b.data(), N, D);
        tr::layernorm_forward_fast(o2.data(), m2.data(), r2.data(), x.data(), w.data(), b.data(), N, D, 2);
        check_close("ln out", o2, o1);
        Vec dx1(N * D, 0.0), dw1(D, 0.0), db1(D, 0.0), dx2 = dx1, dw2 = dw1, db2 = db1;
        tr::layernorm_backward(dx1.data(), dw1.data(), db1.data(), dout.data(), x.data(), w.data(), m1.data(),
                               r1.data(), N, D);
        tr::layernorm_backward_fast(dx2.data(), dw2.data(), db2.data(), dout.data(), x.data(), w.data(), m1.data(),
                                    r1.data(), N, D, 2);
        check_close("ln dx", dx2, dx1);
        check_close("ln dw", dw2, dw1);
        check_close("ln db", db2, db1);
        for (bool relu : {false, true}) {
            tr::activation_forward_fast(o2.data(), x.data(), N * D, relu, 2);
            if (relu) tr::relu_forward(o1.data(), x.data(), N * D);
            else tr::gelu_forward(o1.data(), x.data(), N * D);
            check_close("act out", o2, o1);
            Vec d1(N * D, 0.0), d2(N * D, 0.0);
            tr::activation_backward_fast(d2.data(), x.data(), dout.data(), N * D, relu, 2);
            if (relu) tr::relu_backward(d1.data(), x.data(), dout.data(), N * D);
            else tr::gelu_backward(d1.data(), x.data(), dout.data(), N * D);
            check_close("act d", d2, d1);
        }
    }
    SUBCASE("cross-entropy, residual, zero") {
        const int64_t N = 150, V = 11;
        Vec z = randv(N * V, 44, 3.0), l1(N), l2(N), p1(N * V), p2(N * V);
        std::vector<int32_t> tgt(N);
        for (int64_t n = 0; n < N; ++n) tgt[size_t(n)] = n % 5 == 0 ? -1 : int32_t(n % V);
        CHECK(tr::crossentropy_forward_fast(l2.data(), p2.data(), z.data(), tgt.data(), N, V, 2) ==
              tr::crossentropy_forward(l1.data(), p1.data(), z.data(), tgt.data(), N, V));
        check_close("xent losses", l2, l1, 0.0);  // the same per-row code
        // the fast op skips the softmax of ignored rows (probs 0 there), the rest is the same code
        for (int64_t n = 0; n < N; ++n)
            if (tgt[size_t(n)] < 0)
                for (int64_t j = 0; j < V; ++j) p1[size_t(n * V + j)] = 0.0;
        check_close("xent probs", p2, p1, 0.0);
        Vec d1(N * V, 0.0), d2(N * V, 0.0);
        tr::crossentropy_backward(d1.data(), p1.data(), tgt.data(), 0.01, N, V);
        tr::crossentropy_backward_fast(d2.data(), p1.data(), tgt.data(), 0.01, N, V, 2);
        check_close("xent d", d2, d1, 0.0);
        const int64_t n = 200000;  // several pieces
        Vec a = randv(n, 45), b = randv(n, 46), o1(n), o2(n), da1(n, 1.0), db1(n, 2.0), da2 = da1, db2 = db1;
        tr::residual_forward(o1.data(), a.data(), b.data(), n);
        tr::residual_forward_fast(o2.data(), a.data(), b.data(), n, 2);
        check_close("residual", o2, o1, 0.0);
        tr::residual_backward(da1.data(), db1.data(), a.data(), n);
        tr::residual_backward_fast(da2.data(), db2.data(), a.data(), n, 2);
        check_close("residual da", da2, da1, 0.0);
        check_close("residual db", db2, db1, 0.0);
        tr::zero_fast(o2.data(), n, 2);
        CHECK(std::all_of(o2.begin(), o2.end(), [](double x) { return x == 0.0; }));
    }
    SUBCASE("attention") {
        for (bool causal : {false, true})
            for (float p : {0.0f, 0.2f}) {
                const int64_t B = 2, T = 9, H = 3, Dk = 4, Dv = 5, N = B * T;
                Vec q = randv(N * H * Dk, 40), k = randv(N * H * Dk, 41), v = randv(N * H * Dv, 42),
                    dout = randv(N * H * Dv, 43);
                Vec o1(N * H * Dv), o2(o1.size()), a1(B * H * T * T), a2(a1.size());
                tr::self_attention_forward(o1.data(), a1.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv, 0.5,
                                           causal, p, 9);
                cpu::training_attention_forward(o2.data(), a2.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv,
                                                0.5, causal, p, 9, 2, tr::training_gemm_kernel());
                check_close("att weights", a2, a1);
                check_close("att out", o2, o1);
                Vec dq1(q.size(), 0.0), dk1(k.size(), 0.0), dv1(v.size(), 0.0), dq2 = dq1, dk2 = dk1, dv2 = dv1;
                tr::self_attention_backward(dq1.data(), dk1.data(), dv1.data(), dout.data(), q.data(), k.data(),
                                            v.data(), B, T, H, Dk, Dv, 0.5, causal, p, 9);
                cpu::training_attention_backward(dq2.data(), dk2.data(), dv2.data(), dout.data(), q.data(), k.data(),
                                                 v.data(), a1.data(), B, T, H, Dk, Dv, 0.5, p, 9, 2,
                                                 tr::training_gemm_kernel());
                check_close("att dq", dq2, dq1);
                check_close("att dk", dk2, dk1);
                check_close("att dv", dv2, dv1);
            }
    }
}

// The float32 GEMM paths (attn/nn/gemm_choice.hpp, training_gemm) on every path this CPU has (Eigen, the plain
// C++ kernel, and AVX-512 and AVX2 on x86 or NEON on AArch64), against the
// reference ops run in double on the same float inputs. A float dot product of K terms
// summed with fused multiply-adds is within K * u * sum|terms| of the exact value (u =
// 2^-24, the unit roundoff; Higham's gamma_K bound), so the linear ops are checked against
// 2 * K * u * sum|terms| + 1e-30 per element, the sum of |terms| computed in double by the
// reference ops on |x|, |W| (the generic kernel rounds each product before adding it: within
// (K + 1) u sum|terms|, inside the same bound). Attention (softmax between two products of <= 9 terms, inputs
// of order 1) is checked at 1e-5 relative + 1e-5 absolute, about 100 ulps. Each path is
// also bit-identical at 1 and 3 threads, with N not a multiple of any piece or tile.
namespace {
using FVec = std::vector<float>;
FVec to_float(const Vec& v) { return FVec(v.begin(), v.end()); }
Vec to_double(const FVec& v) { return Vec(v.begin(), v.end()); }
Vec absv(const Vec& v) {
    Vec a(v);
    for (auto& x : a) x = std::fabs(x);
    return a;
}
void check_bound(const std::string& what, const FVec& got, const Vec& ref, const Vec& abs_sum, double K) {
    REQUIRE(got.size() == ref.size());
    const double u = std::ldexp(1.0, -24);
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - ref[i]);
        if (err > 2 * K * u * abs_sum[i] + 1e-30) ++bad;
        worst = std::max(worst, err / (abs_sum[i] + 1e-30));
    }
    INFO(what << ": " << bad << " elements off the bound, worst |err| / sum|terms| = " << worst);
    CHECK(bad == 0);
}
}  // namespace

TEST_CASE("nn ops: every float GEMM path matches the reference ops element by element, at any thread count") {
    const attn::GemmChoice before = tr::training_gemm();
    int tested = 0;
    for (const attn::GemmChoice path : attn::gemm_choices()) {
        if (path == attn::GemmChoice::Best || !attn::gemm_choice_available(path)) continue;
        tr::set_training_gemm(path);
        REQUIRE(tr::training_gemm() == path);
        ++tested;
        CAPTURE(attn::gemm_choice_name(path));
        // linear: C = 70, OC = 37 and 64 (a partial and a whole vector block), N = 1, 263
        for (int64_t OC : {37, 64})
            for (int64_t N : {1, 263}) {
                const int64_t C = 70;
                CAPTURE(OC);
                CAPTURE(N);
                const FVec x = to_float(randv(N * C, 50)), W = to_float(randv(OC * C, 51)), b = to_float(randv(OC, 52)),
                           dout = to_float(randv(N * OC, 53));
                const Vec xd = to_double(x), Wd = to_double(W), bd = to_double(b), dd = to_double(dout);
                Vec ref(N * OC), mag(N * OC);
                tr::matmul_forward(ref.data(), xd.data(), Wd.data(), bd.data(), N, C, OC);
                tr::matmul_forward(mag.data(), absv(xd).data(), absv(Wd).data(), absv(bd).data(), N, C, OC);
                FVec o1(N * OC), o3(N * OC);
                tr::matmul_forward_fast(o1.data(), x.data(), W.data(), b.data(), N, C, OC, 1);
                tr::matmul_forward_fast(o3.data(), x.data(), W.data(), b.data(), N, C, OC, 3);
                check_bound("linear out", o1, ref, mag, double(C + 1));
                CHECK(o1 == o3);
                // backward, adding into nonzero gradients
                Vec dx(x.size(), 0.5), dW(W.size(), 0.25), db(OC, 0.125), mx = dx, mW = dW, mb = db;
                tr::matmul_backward(dx.data(), dW.data(), db.data(), dd.data(), xd.data(), Wd.data(), N, C, OC);
                tr::matmul_backward(mx.data(), mW.data(), mb.data(), absv(dd).data(), absv(xd).data(), absv(Wd).data(),
                                    N, C, OC);
                FVec dx1(x.size(), 0.5f), dW1(W.size(), 0.25f), db1(OC, 0.125f), dx3 = dx1, dW3 = dW1, db3 = db1;
                tr::matmul_backward_fast(dx1.data(), dW1.data(), db1.data(), dout.data(), x.data(), W.data(), N, C, OC,
                                         1);
                tr::matmul_backward_fast(dx3.data(), dW3.data(), db3.data(), dout.data(), x.data(), W.data(), N, C, OC,
                                         3);
                check_bound("linear dx", dx1, dx, mx, double(OC + 1));
                check_bound("linear dW", dW1, dW, mW, double(N + 1));
                check_bound("linear db", db1, db, mb, double(N + 1));
                CHECK(dx1 == dx3);
                CHECK(dW1 == dW3);
                CHECK(db1 == db3);
            }
        // attention, packed and through the fused q|k|v row strides the model uses
        for (bool causal : {false, true})
            for (float p : {0.0f, 0.2f})
                for (bool fused : {false, true}) {
                    CAPTURE(causal);
                    CAPTURE(p);
                    CAPTURE(fused);
                    const int64_t B = 2, T = 19, H = 3, Dk = 4, Dv = 5, N = B * T, QK = H * Dk, VV = H * Dv;
                    const int64_t LD = fused ? 2 * QK + VV : 0;  // 0: packed
                    const FVec buf = to_float(randv(N * (2 * QK + VV), 54));
                    // packed copies for the reference
                    FVec qf(N * QK), kf(N * QK), vf(N * VV);
                    for (int64_t n = 0; n < N; ++n) {
                        for (int64_t j = 0; j < QK; ++j) {
                            qf[size_t(n * QK + j)] = buf[size_t(n * (2 * QK + VV) + j)];
                            kf[size_t(n * QK + j)] = buf[size_t(n * (2 * QK + VV) + QK + j)];
                        }
                        for (int64_t j = 0; j < VV; ++j)
                            vf[size_t(n * VV + j)] = buf[size_t(n * (2 * QK + VV) + 2 * QK + j)];
                    }
                    const float* q = fused ? buf.data() : qf.data();
                    const float* k = fused ? buf.data() + QK : kf.data();
                    const float* v = fused ? buf.data() + 2 * QK : vf.data();
                    const FVec dout = to_float(randv(N * VV, 55));
                    const Vec qd = to_double(qf), kd = to_double(kf), vd = to_double(vf), dd = to_double(dout);
                    Vec o(N * VV), a(B * H * T * T);
                    tr::self_attention_forward(o.data(), a.data(), qd.data(), kd.data(), vd.data(), B, T, H, Dk, Dv,
                                               0.5, causal, p, 9);
                    FVec o1(o.size()), a1(a.size()), o3(o.size()), a3(a.size());
                    cpu::training_attention_forward(o1.data(), a1.data(), q, k, v, B, T, H, Dk, Dv, 0.5f, causal, p,
                                                    9, 1, tr::training_gemm_kernel(), LD, LD);
                    cpu::training_attention_forward(o3.data(), a3.data(), q, k, v, B, T, H, Dk, Dv, 0.5f, causal, p,
                                                    9, 3, tr::training_gemm_kernel(), LD, LD);
                    check_close("att weights", a1, a, 1e-5);
                    check_close("att out", o1, o, 1e-5);
                    CHECK(a1 == a3);
                    CHECK(o1 == o3);
                    Vec dq(qd.size(), 0.0), dk(kd.size(), 0.0), dv(vd.size(), 0.0);
                    tr::self_attention_backward(dq.data(), dk.data(), dv.data(), dd.data(), qd.data(), kd.data(),
                                                vd.data(), B, T, H, Dk, Dv, 0.5, causal, p, 9);
                    FVec g1(buf.size(), 0.0f), g3(buf.size(), 0.0f), dq1(qf.size(), 0.0f), dk1(kf.size(), 0.0f),
                        dv1(vf.size(), 0.0f);
                    float* gq = fused ? g1.data() : dq1.data();
                    float* gk = fused ? g1.data() + QK : dk1.data();
                    float* gv = fused ? g1.data() + 2 * QK : dv1.data();
                    cpu::training_attention_backward(gq, gk, gv, dout.data(), q, k, v, a1.data(), B, T, H, Dk, Dv,
                                                     0.5f, p, 9, 1, tr::training_gemm_kernel(), LD, LD);
                    if (fused) {  // the same at 3 threads, then unpacked for the comparison
                        cpu::training_attention_backward(g3.data(), g3.data() + QK, g3.data() + 2 * QK, dout.data(), q,
                                                         k, v, a1.data(), B, T, H, Dk, Dv, 0.5f, p, 9, 3,
                                                         tr::training_gemm_kernel(), LD, LD);
                        CHECK(g1 == g3);
                        for (int64_t n = 0; n < N; ++n) {
                            for (int64_t j = 0; j < QK; ++j) {
                                dq1[size_t(n * QK + j)] = g1[size_t(n * LD + j)];
                                dk1[size_t(n * QK + j)] = g1[size_t(n * LD + QK + j)];
                            }
                            for (int64_t j = 0; j < VV; ++j) dv1[size_t(n * VV + j)] = g1[size_t(n * LD + 2 * QK + j)];
                        }
                    }
                    check_close("att dq", dq1, dq, 1e-5);
                    check_close("att dk", dk1, dk, 1e-5);
                    check_close("att dv", dv1, dv, 1e-5);
                }
    }
    tr::set_training_gemm(before);
    CHECK(tested >= 1);
    // best is the widest kernel this CPU has, and what training starts with (`before`)
    using G = attn::GemmChoice;
    const G widest = attn::gemm_choice_available(G::Avx512) ? G::Avx512
                     : attn::gemm_choice_available(G::Avx2) ? G::Avx2
                     : attn::gemm_choice_available(G::Neon) ? G::Neon
                                                             : G::Eigen;
    CHECK(attn::resolve_gemm_choice(G::Best) == widest);
    CHECK(before == widest);
    // the one list: every name found back, and an unknown one refused
    for (const G g : attn::gemm_choices()) CHECK(attn::find_gemm_choice(attn::gemm_choice_name(g)) == g);
    CHECK_FALSE(attn::find_gemm_choice("avx1024").has_value());
    CHECK(attn::gemm_choice_names() == "best, avx512, avx2, neon, generic or eigen");
}

// Into::Set (fast_ops.hpp): a backward op that writes its input gradient instead of adding
// to it. On a buffer full of NaN it must give exactly what Into::Add gives on zeros (x and
// 0 + x are the same float; the same kernels run), or a NaN would show; and the fused MLP
// ops must give the numbers of the two separate ops they replace: the same kernel, the same
// formula, the same pieces, so bit for bit here (float on every GEMM path, at 1 and 3
// threads; piece lengths are multiples of 1024 elements, where the fused activation and
// the separate one cut their tanh blocks alike).
// A query of NaN (one head of one token) makes exactly its weight row (masked keys included)
// and its output slice NaN in the float fast ops, as in the reference and PyTorch, on every path (ATTN_ISA=generic
// takes Eigen's softmax, the others the row kernels); every other value is the reference's.
TEST_CASE("nn ops: a query of NaN gives NaN in exactly its weight row and output slice (fast ops)") {
    const int64_t B = 2, T = 19, H = 3, Dk = 4, Dv = 5, N = B * T, bad_b = 1, bad_t = 7, bad_h = 2;
    FVec q = to_float(randv(N * H * Dk, 56));
    const FVec k = to_float(randv(N * H * Dk, 57)), v = to_float(randv(N * H * Dv, 58));
    for (int64_t d = 0; d < Dk; ++d) q[size_t((bad_b * T + bad_t) * H * Dk + bad_h * Dk + d)] = std::nanf("");
    for (const bool causal : {false, true}) {
        CAPTURE(causal);
        FVec o(N * H * Dv), a(B * H * T * T), of(o.size()), af(a.size());
        tr::self_attention_forward(o.data(), a.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv, 0.5f, causal,
                                   0.0f, 9);
        cpu::training_attention_forward(of.data(), af.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv, 0.5f,
                                        causal, 0.0f, 9, 2, tr::training_gemm_kernel());
        int wrong = 0;
        for (size_t e = 0; e < a.size(); ++e) {
            const auto row = static_cast<int64_t>(e) / T;  // (b, h, i)
            const bool bad = row == (bad_b * H + bad_h) * T + bad_t;
            if (bad) wrong += std::isnan(a[e]) && std::isnan(af[e]) ? 0 : 1;
            else wrong += std::abs(af[e] - a[e]) <= 1e-5f ? 0 : 1;
        }
        for (size_t e = 0; e < o.size(); ++e) {
            const auto n = static_cast<int64_t>(e) / (H * Dv), h = static_cast<int64_t>(e) % (H * Dv) / Dv;
            if (n == bad_b * T + bad_t && h == bad_h) wrong += std::isnan(o[e]) && std::isnan(of[e]) ? 0 : 1;
            else wrong += std::abs(of[e] - o[e]) <= 1e-5f ? 0 : 1;
        }
        CHECK(wrong == 0);
    }
}

TEST_CASE("nn ops: Into::Set equals adding into zeros, and the fused MLP ops equal the separate ones") {
    const attn::GemmChoice before = tr::training_gemm();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    int tested = 0;
    for (const attn::GemmChoice path : attn::gemm_choices()) {
        if (path == attn::GemmChoice::Best || !attn::gemm_choice_available(path)) continue;
        tr::set_training_gemm(path);
        ++tested;
        CAPTURE(attn::gemm_choice_name(path));
        for (int threads : {1, 3}) {
            CAPTURE(threads);
            const int64_t N = 512, C = 32, OC = 64;  // N * OC and N * C: whole 1024-element tanh blocks
            const FVec x = to_float(randv(N * C, 60)), W = to_float(randv(OC * C, 61)), b = to_float(randv(OC, 62)),
                       dout = to_float(randv(N * OC, 63));
            // linear backward
            FVec dx_add(N * C, 0.0f), dx_set(N * C, nan), dW1(OC * C, 0.0f), dW2 = dW1, db1(OC, 0.0f), db2 = db1;
            tr::matmul_backward_fast(dx_add.data(), dW1.data(), db1.data(), dout.data(), x.data(), W.data(), N, C, OC,
                                     threads);
            tr::matmul_backward_fast(dx_set.data(), dW2.data(), db2.data(), dout.data(), x.data(), W.data(), N, C, OC,
                                     threads, tr::Into::Set);
            CHECK(dx_set == dx_add);
            CHECK(dW2 == dW1);
            CHECK(db2 == db1);
            // layernorm backward (dw, db still add)
            FVec o(N * C), mean(N), rstd(N), w = to_float(randv(C, 64)), bb = to_float(randv(C, 65)),
                dln = to_float(randv(N * C, 66));
            tr::layernorm_forward_fast(o.data(), mean.data(), rstd.data(), x.data(), w.data(), bb.data(), N, C,
                                       threads);
            FVec lx_add(N * C, 0.0f), lx_set(N * C, nan), lw1(C, 0.0f), lw2 = lw1, lb1(C, 0.0f), lb2 = lb1;
            tr::layernorm_backward_fast(lx_add.data(), lw1.data(), lb1.data(), dln.data(), x.data(), w.data(),
                                        mean.data(), rstd.data(), N, C, threads);
            tr::layernorm_backward_fast(lx_set.data(), lw2.data(), lb2.data(), dln.data(), x.data(), w.data(),
                                        mean.data(), rstd.data(), N, C, threads, tr::Into::Set);
            CHECK(lx_set == lx_add);
            CHECK(lw2 == lw1);
            CHECK(lb2 == lb1);
            // cross-entropy backward: ignored rows are written as zeros too
            const int64_t V = 11;
            const FVec z = to_float(randv(N * V, 67, 3.0));
            FVec probs(N * V), losses(N);
            std::vector<int32_t> tgt(N);
            for (int64_t n = 0; n < N; ++n) tgt[size_t(n)] = n % 3 == 0 ? -1 : int32_t(n % V);
            tr::crossentropy_forward_fast(losses.data(), probs.data(), z.data(), tgt.data(), N, V, threads);
            FVec dz_add(N * V, 0.0f), dz_set(N * V, nan);
            tr::crossentropy_backward_fast(dz_add.data(), probs.data(), tgt.data(), 0.01f, N, V, threads);
            tr::crossentropy_backward_fast(dz_set.data(), probs.data(), tgt.data(), 0.01f, N, V, threads,
                                           tr::Into::Set);
            CHECK(dz_set == dz_add);
            // attention backward, with and without dropout
            for (float p : {0.0f, 0.2f}) {
                const int64_t B = 2, T = 9, H = 3, Dk = 4, Dv = 5, M = B * T;
                const FVec q = to_float(randv(M * H * Dk, 70)), k = to_float(randv(M * H * Dk, 71)),
                           v = to_float(randv(M * H * Dv, 72)), dO = to_float(randv(M * H * Dv, 73));
                FVec out(M * H * Dv), att(B * H * T * T);
                cpu::training_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Dk, Dv,
                                                0.5f, false, p, 9, threads, tr::training_gemm_kernel());
                FVec dq1(q.size(), 0.0f), dk1(k.size(), 0.0f), dv1(v.size(), 0.0f), dq2(q.size(), nan),
                    dk2(k.size(), nan), dv2(v.size(), nan);
                cpu::training_attention_backward(dq1.data(), dk1.data(), dv1.data(), dO.data(), q.data(), k.data(),
                                                 v.data(), att.data(), B, T, H, Dk, Dv, 0.5f, p, 9, threads,
                                                 tr::training_gemm_kernel());
                cpu::training_attention_backward(dq2.data(), dk2.data(), dv2.data(), dO.data(), q.data(), k.data(),
                                                 v.data(), att.data(), B, T, H, Dk, Dv, 0.5f, p, 9, threads,
                                                 tr::training_gemm_kernel(), 0, 0, /*accumulate=*/false);
                CHECK(dq2 == dq1);
                CHECK(dk2 == dk1);
                CHECK(dv2 == dv1);
            }
            // the MLP: fc1 + activation forward; fc2 backward through the activation
            for (bool relu : {false, true}) {
                CAPTURE(relu);
                FVec pre1(N * OC), act1(N * OC), pre2(N * OC, nan), act2(N * OC, nan);
                tr::matmul_forward_fast(pre1.data(), x.data(), W.data(), b.data(), N, C, OC, threads);
                tr::activation_forward_fast(act1.data(), pre1.data(), N * OC, relu, threads);
                tr::matmul_act_forward_fast(pre2.data(), act2.data(), x.data(), W.data(), b.data(), N, C, OC, relu,
                                            threads);
                CHECK(pre2 == pre1);
                CHECK(act2 == act1);
                // fc2: (N, OC) -> (N, C) with weight W2 (C, OC); its input is act1
                const FVec W2 = to_float(randv(C * OC, 74)), d2 = to_float(randv(N * C, 75));
                FVec dact(N * OC, 0.0f), dpre1(N * OC, 0.0f), dpre2(N * OC, nan), gW1(C * OC, 0.0f), gW2 = gW1,
                    gb1(C, 0.0f), gb2 = gb1;
                tr::matmul_backward_fast(dact.data(), gW1.data(), gb1.data(), d2.data(), act1.data(), W2.data(), N, OC,
                                         C, threads);
                tr::activation_backward_fast(dpre1.data(), pre1.data(), dact.data(), N * OC, relu, threads);
                tr::matmul_act_backward_fast(dpre2.data(), gW2.data(), gb2.data(), d2.data(), act1.data(), pre1.data(),
                                             W2.data(), N, OC, C, relu, threads);
                CHECK(dpre2 == dpre1);
                CHECK(gW2 == gW1);
                CHECK(gb2 == gb1);
            }
        }
    }
    tr::set_training_gemm(before);
    CHECK(tested >= 1);
}

TEST_CASE("nn ops: float LayerNorm and GELU of the fast ops stay within float rounding of the double reference") {
    // D = 64 and 24: the AVX-512 rows (D a multiple of 16, where the build targets AVX-512) and
    // the lane loops; GELU over a length that leaves a partial vector, x in [-12, 12] (both
    // saturations). Against the same formulas in double:
    //  - LayerNorm out and dx: a few roundings per term of sums of D terms of size O(1); bound
    //    1e-5 relative to the output's scale (D u = 64 * 6e-8 = 4e-6 with room);
    //  - GELU: the fast float form x sigmoid(2u) with a 1-ulp exp and reciprocal against
    //    0.5 x (1 + tanh u) in double; 1e-6 (1 + |x|) absolute covers a few ulps of the
    //    value and of x.
    for (int64_t D : {64, 24}) {
        CAPTURE(D);
        const int64_t N = 70;
        const Vec x = randv(N * D, 80, 2.0), w = randv(D, 81), b = randv(D, 82), dout = randv(N * D, 83);
        Vec o1(N * D), m1(N), r1(N);
        tr::layernorm_forward(o1.data(), m1.data(), r1.data(), x.data(), w.data(), b.data(), N, D);
        const FVec xf = to_float(x), wf = to_float(w), bf = to_float(b), df = to_float(dout);
        FVec o2(N * D), m2(N), r2(N);
        tr::layernorm_forward_fast(o2.data(), m2.data(), r2.data(), xf.data(), wf.data(), bf.data(), N, D, 2);
        check_close("ln out", o2, o1, 1e-5);
        check_close("ln mean", m2, m1, 1e-5);
        check_close("ln rstd", r2, r1, 1e-5);
        Vec dx1(N * D, 0.0), dw1(D, 0.0), db1(D, 0.0);
        tr::layernorm_backward(dx1.data(), dw1.data(), db1.data(), dout.data(), x.data(), w.data(), m1.data(),
                               r1.data(), N, D);
        FVec dx2(N * D, 7.0f), dw2(D, 0.0f), db2(D, 0.0f);  // Set: the 7s are overwritten
        tr::layernorm_backward_fast(dx2.data(), dw2.data(), db2.data(), df.data(), xf.data(), wf.data(), m2.data(),
                                    r2.data(), N, D, 2, tr::Into::Set);
        double dmax = 0;
        for (double v : dx1) dmax = std::max(dmax, std::fabs(v));
        check_close("ln dx", dx2, dx1, 1e-5 * dmax);
        check_close("ln dw", dw2, dw1, 1e-5 * double(N));
        check_close("ln db", db2, db1, 1e-5 * double(N));
    }
    const int64_t n = 1001;
    Vec x(n);
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -12.0 + 24.0 * double(i) / double(n - 1);
    const Vec dy = randv(n, 84);
    Vec g1(n), d1(n, 0.0);
    tr::gelu_forward(g1.data(), x.data(), n);
    tr::gelu_backward(d1.data(), x.data(), dy.data(), n);
    const FVec xf = to_float(x), dyf = to_float(dy);
    FVec g2(n), d2(n);
    tr::activation_forward_fast(g2.data(), xf.data(), n, false, 2);
    tr::activation_backward_fast(d2.data(), xf.data(), dyf.data(), n, false, 2, tr::Into::Set);
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double tol = 1e-6 * (1.0 + std::fabs(x[size_t(i)]));
        const double eg = std::fabs(double(g2[size_t(i)]) - g1[size_t(i)]);
        const double ed = std::fabs(double(d2[size_t(i)]) - d1[size_t(i)]) / (1.0 + std::fabs(dy[size_t(i)]));
        if (eg > tol || ed > tol) ++bad;
        worst = std::max({worst, eg, ed});
    }
    INFO("gelu: " << bad << " of " << n << " off, worst " << worst);
    CHECK(bad == 0);
}

TEST_CASE("nn ops: the fast erf GELU stays within float rounding of the double reference") {
    // x in [-12, 12] (both saturations; erf is +-1 in float beyond |x| = 5.7), a length that leaves
    // a partial 16-lane vector. Float: the rational erf (Eigen's for float, on the row kernels or
    // Eigen's arrays under ATTN_ISA=generic) is within a few ulps of erf, i.e. a few 6e-8 absolute;
    // the value 0.5 x (1 + erf) scales that by |x|/2 and adds a few roundings of |gelu| <= |x|, the
    // gradient Phi + x phi adds a 1-ulp exp times x phi <= 0.25: 1e-6 (1 + |x|) absolute (relative
    // to 1 + |dout|, + the 1 already there when adding) covers them with room, and a wrong
    // constant or sign is off by 1e-2 or more (measured over 200,001 points: worst 0.2 of the bound
    // on the AVX-512, AVX2 and ATTN_ISA=generic paths). Double: Eigen's erf and exp against
    // std::erf and std::exp, a few double ulps: 1e-12.
    const int64_t n = 1001;
    Vec x(n);
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -12.0 + 24.0 * double(i) / double(n - 1);
    const Vec dy = randv(n, 85);
    Vec g1(n), d1(n, 0.0);
    tr::gelu_erf_forward(g1.data(), x.data(), n);
    tr::gelu_erf_backward(d1.data(), x.data(), dy.data(), n);
    Vec gd(n), dd(n, 7.0);  // double fast twin; Set overwrites the 7s
    tr::gelu_erf_forward_fast(gd.data(), x.data(), n, 2);
    tr::gelu_erf_backward_fast(dd.data(), x.data(), dy.data(), n, 2, tr::Into::Set);
    check_close("gelu erf double", gd, g1);
    check_close("gelu erf' double", dd, d1);
    const FVec xf = to_float(x), dyf = to_float(dy);
    FVec g2(n), inplace = xf, d2(n, 7.0f), d3(n, 1.0f);
    tr::gelu_erf_forward_fast(g2.data(), xf.data(), n, 2);
    tr::gelu_erf_forward_fast(inplace.data(), inplace.data(), n, 1);
    tr::gelu_erf_backward_fast(d2.data(), xf.data(), dyf.data(), n, 2, tr::Into::Set);
    tr::gelu_erf_backward_fast(d3.data(), xf.data(), dyf.data(), n, 2, tr::Into::Add);
    CHECK(inplace == g2);  // in place: the same bits
    int bad = 0;
    double worst = 0;  // error / bound
    for (int64_t i = 0; i < n; ++i) {
        const size_t k = size_t(i);
        const double tol = 1e-6 * (1.0 + std::fabs(x[k]));
        const double eg = std::fabs(double(g2[k]) - g1[k]);
        const double ed = std::fabs(double(d2[k]) - d1[k]) / (1.0 + std::fabs(dy[k]));
        const double ea = std::fabs(double(d3[k]) - (1.0 + d1[k])) / (2.0 + std::fabs(dy[k]));
        if (eg > tol || ed > tol || ea > tol) ++bad;
        worst = std::max({worst, eg / tol, ed / tol, ea / tol});
    }
    INFO("gelu erf float: " << bad << " of " << n << " off, worst error / bound " << worst);
    CHECK(bad == 0);
}

TEST_CASE("nn ops: LayerNorm's eps reaches the fast rows (BERT's 1e-12, and one large enough to matter)") {
    // eps 0.25 against a variance of about 1 moves every output by some 10%: a fast op that
    // dropped eps for the default 1e-5 would be far off. Bound as the LayerNorm case above.
    for (int64_t D : {64, 24}) {  // the row kernels (D a multiple of 16) and the lane loops
        for (double eps : {1e-12, 0.25}) {
            CAPTURE(D);
            CAPTURE(eps);
            const int64_t N = 9;
            const Vec x = randv(N * D, 86), w = randv(D, 87), b = randv(D, 88);
            Vec o1(N * D), m1(N), r1(N);
            tr::layernorm_forward(o1.data(), m1.data(), r1.data(), x.data(), w.data(), b.data(), N, D, eps);
            FVec o2 = to_float(x), m2(N), r2(N);  // in place
            const FVec wf = to_float(w), bf = to_float(b);
            tr::layernorm_forward_fast(o2.data(), m2.data(), r2.data(), o2.data(), wf.data(), bf.data(), N, D, 2,
                                       static_cast<float>(eps));
            check_close("ln out", o2, o1, 1e-5);
            check_close("ln rstd", r2, r1, 1e-5);
        }
    }
}
