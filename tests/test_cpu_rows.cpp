// The row kernels of lib/cpu (attn/cpu/rows.hpp: LayerNorm, GELU (tanh and erf), softmax and dS
// rows, gather transposes), each table this CPU runs (AVX-512 and AVX2 on x86; NEON on AArch64, where the
// cross build runs this file under QEMU), against the same formulas in double element by
// element. The callers (lib/train's fast ops) take the widest table only; this file reaches
// every one. u = 2^-24 is float's unit roundoff. Tolerances, each far below a wrong lane, mask
// or index (an error of the order of a value itself):
//  - LayerNorm out, mean, rstd: a few roundings per term of sums of D <= 64 terms of O(1):
//    D u = 4e-6, bound 1e-5 relative + 1e-5 absolute; dx 1e-5 of max|dx|; dw, db (sums over
//    N rows) 1e-5 N;
//  - GELU: x sigmoid(2u) with a 1-ulp exp and reciprocal against 0.5 x (1 + tanh u) in double:
//    1e-6 (1 + |x|), relative to 1 + |dout| (+ |dinp| when adding) for the gradient;
//  - erf GELU: Eigen's rational erf for float (a few ulps of erf, i.e. a few 6e-8 absolute,
//    through a 1-ulp reciprocal) scaled by |x|/2, and for the gradient a 1-ulp exp times
//    x phi(x) <= 0.25: the same 1e-6 (1 + |x|) bounds;
//  - softmax: each weight e_i / S with e_i = exp(s_i - max) off by about (|s_i - max| + 4) u
//    relative (the argument's rounding, the exp's ulp) and S by T u: bound (2 (T + |s_i -
//    max|) + 16) u p_i; masked weights exactly 0;
//  - dS = f P (dP - rs), rs = sum P dP: rs off by (T + 1) u sum|P dP|, the rest a few
//    roundings: bound |f P| ((T + 1) u sum|P dP| + 4 u (|dP| + |rs|)), twice that;
//  - transposes move floats (adding one float at most): exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/rows.hpp"
#include "test_util.hpp"

namespace {

constexpr double kU = 0x1p-24;

std::vector<float> normals(uint64_t seed, int64_t n, float scale = 1.0f) {
    attn::Rng rng(seed, static_cast<uint64_t>(n));
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = scale * rng.normal();
    return v;
}

struct Table {
    const char* name;
    const attn::rows::RowKernels* k;
    bool cpu;
};

// The tables this CPU runs under ATTN_ISA; the others reported as skipped.
std::vector<Table> tables() {
    std::vector<Table> out;
    for (const Table t : {Table{"avx512", attn::rows::rows_avx512_kernels(), attn::cpu_has_avx512()},
                          Table{"avx2", attn::rows::rows_avx2_kernels(), attn::cpu_has_avx2()},
                          Table{"neon", attn::rows::rows_neon_kernels(), attn::cpu_has_neon()}}) {
        if (t.k != nullptr && t.cpu) out.push_back(t);
        else attn::test::skip(std::string("row kernels ") + t.name + ": not on this CPU");
    }
    return out;
}

// Elements where |got - ref| > bound(i); the worst ratio in an INFO.
template <class Bound>
int off(const std::string& what, const std::vector<float>& got, const std::vector<double>& ref, Bound bound) {
    REQUIRE(got.size() == ref.size());
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - ref[i]), b = bound(i);
        if (!(err <= b)) ++bad;
        worst = std::max(worst, err / b);
    }
    INFO(what << ": " << bad << " of " << got.size() << " off, worst error / bound " << worst);
    CHECK(bad == 0);
    return bad;
}

}  // namespace

TEST_CASE("cpu rows: LayerNorm forward and backward of every table match double element by element") {
    for (const Table& t : tables()) {
        const std::string family = t.name;
        CAPTURE(family);
        for (const int64_t D : {64, 48}) {
            CAPTURE(D);
            const int64_t N = 7;
            const float eps = 1e-5f;
            const std::vector<float> x = normals(1, N * D, 2.0f), w = normals(2, D), b = normals(3, D),
                                     dout = normals(4, N * D);
            std::vector<float> out(static_cast<size_t>(N * D)), mean(N), rstd(N);
            t.k->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, D, eps);
            std::vector<double> ro(out.size()), rm(N), rr(N);
            for (int64_t n = 0; n < N; ++n) {
                double s = 0, q = 0;
                for (int64_t i = 0; i < D; ++i) s += x[size_t(n * D + i)];
                const double m = s / double(D);
                for (int64_t i = 0; i < D; ++i) q += (x[size_t(n * D + i)] - m) * (x[size_t(n * D + i)] - m);
                const double r = 1.0 / std::sqrt(q / double(D) + eps);
                for (int64_t i = 0; i < D; ++i)
                    ro[size_t(n * D + i)] = (x[size_t(n * D + i)] - m) * r * w[size_t(i)] + b[size_t(i)];
                rm[size_t(n)] = m;
                rr[size_t(n)] = r;
            }
            const auto rel = [](const std::vector<double>& ref) {
                return [&ref](size_t i) { return 1e-5 + 1e-5 * std::fabs(ref[i]); };
            };
            off("ln out", out, ro, rel(ro));
            off("ln mean", mean, rm, rel(rm));
            off("ln rstd", rstd, rr, rel(rr));
            // backward from the kernel's own mean and rstd, into fresh (=) and into nonzero (+=)
            for (const bool add : {false, true}) {
                CAPTURE(add);
                std::vector<float> dx(out.size(), add ? 0.5f : 7.0f), dw(size_t(D), 0.25f), db(size_t(D), 0.125f);
                t.k->layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                                        rstd.data(), N, D, add);
                std::vector<double> rx(out.size()), rw(size_t(D), 0.25), rb(size_t(D), 0.125);
                double dmax = 0;
                for (int64_t n = 0; n < N; ++n) {
                    const double m = mean[size_t(n)], r = rstd[size_t(n)];
                    double gs = 0, gxs = 0;
                    for (int64_t i = 0; i < D; ++i) {
                        const double xh = (x[size_t(n * D + i)] - m) * r,
                                     g = double(dout[size_t(n * D + i)]) * w[size_t(i)];
                        gs += g;
                        gxs += g * xh;
                    }
                    for (int64_t i = 0; i < D; ++i) {
                        const size_t e = size_t(n * D + i);
                        const double xh = (x[e] - m) * r, g = double(dout[e]) * w[size_t(i)];
                        rx[e] = (add ? 0.5 : 0.0) + r * (g - gs / double(D) - xh * gxs / double(D));
                        dmax = std::max(dmax, std::fabs(rx[e]));
                        rw[size_t(i)] += double(dout[e]) * xh;
                        rb[size_t(i)] += dout[e];
                    }
                }
                off("ln dx", dx, rx, [&](size_t) { return 1e-5 * dmax; });
                off("ln dw", dw, rw, [&](size_t) { return 1e-5 * double(N); });
                off("ln db", db, rb, [&](size_t) { return 1e-5 * double(N); });
            }
        }
    }
}

namespace {

// x in [-12, 12] (both saturations; for erf, its argument beyond the clamp at 4), a length
// that leaves a partial 16-lane vector
std::vector<float> gelu_inputs(int64_t m) {
    std::vector<float> x(size_t(m), 0.0f);
    for (int64_t i = 0; i < m; ++i) x[size_t(i)] = float(-12.0 + 24.0 * double(i) / double(m - 1));
    return x;
}

// One GELU's row kernels (forward, backward; fresh, added to and in place) in every table
// against its double values rg (forward) and rd (backward times dy), within
// 1e-6 (1 + |x|) (1 + |dy|): a few float ulps of the value and of the input's rounding.
template <class Fwd, class Bwd>
void check_gelu_tables(const char* name, const std::vector<float>& x, const std::vector<float>& dy,
                       const std::vector<double>& rg, const std::vector<double>& rd, Fwd fwd, Bwd bwd) {
    const auto m = static_cast<int64_t>(x.size());
    const std::string n(name);
    for (const Table& t : tables()) {
        const std::string family = t.name;
        CAPTURE(family);
        std::vector<float> g(size_t(m), -7.0f);
        fwd(*t.k, g.data(), x.data(), m);
        off(n, g, rg, [&](size_t i) { return 1e-6 * (1 + std::fabs(x[i])); });
        std::vector<float> inplace = x;  // out is inp itself
        fwd(*t.k, inplace.data(), inplace.data(), m);
        CHECK(inplace == g);
        for (const bool add : {false, true}) {
            CAPTURE(add);
            std::vector<float> d(size_t(m), add ? 1.0f : 7.0f);
            std::vector<double> ref = rd;
            if (add)
                for (double& r : ref) r += 1.0;
            bwd(*t.k, d.data(), x.data(), dy.data(), m, add);
            off(n + "'", d, ref,
                [&](size_t i) { return 1e-6 * (1 + std::fabs(x[i])) * (1 + std::fabs(dy[i]) + (add ? 1.0 : 0.0)); });
        }
        std::vector<float> din = dy;  // in place: dinp is dout itself
        bwd(*t.k, din.data(), x.data(), din.data(), m, false);
        off(n + "' in place", din, rd, [&](size_t i) { return 1e-6 * (1 + std::fabs(x[i])) * (1 + std::fabs(dy[i])); });
    }
}

}  // namespace

TEST_CASE("cpu rows: GELU forward and backward of every table match double element by element") {
    const int64_t m = 1001;
    const std::vector<float> x = gelu_inputs(m), dy = normals(5, m);
    const double c = 0.7978845608028654, a = 0.044715;
    std::vector<double> rg(static_cast<size_t>(m)), rd(static_cast<size_t>(m));
    for (size_t i = 0; i < size_t(m); ++i) {
        const double v = x[i], u = c * (v + a * v * v * v), th = std::tanh(u);
        rg[i] = 0.5 * v * (1 + th);
        rd[i] = (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * c * (1 + 3 * a * v * v)) * dy[i];
    }
    check_gelu_tables(
        "gelu", x, dy, rg, rd, [](const auto& k, float* o, const float* i, int64_t n) { k.gelu_forward(o, i, n); },
        [](const auto& k, float* d, const float* i, const float* g, int64_t n, bool add) {
            k.gelu_backward(d, i, g, n, add);
        });
}

TEST_CASE("cpu rows: erf GELU forward and backward of every table match double element by element") {
    const int64_t m = 1001;
    const std::vector<float> x = gelu_inputs(m), dy = normals(8, m);
    std::vector<double> rg(static_cast<size_t>(m)), rd(static_cast<size_t>(m));
    for (size_t i = 0; i < size_t(m); ++i) {
        const double v = x[i], cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
        rg[i] = v * cdf;
        rd[i] = (cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI)) * dy[i];
    }
    check_gelu_tables(
        "gelu erf", x, dy, rg, rd,
        [](const auto& k, float* o, const float* i, int64_t n) { k.gelu_erf_forward(o, i, n); },
        [](const auto& k, float* d, const float* i, const float* g, int64_t n, bool add) {
            k.gelu_erf_backward(d, i, g, n, add);
        });
}

TEST_CASE("cpu rows: softmax and dS rows of every table match double element by element") {
    const int64_t T = 37;  // two whole 16-lane vectors and a tail of 5
    const float factor = 0.5f;
    const std::vector<float> S = normals(6, T * T, 3.0f), dP = normals(7, T * T);
    for (const Table& t : tables()) {
        const std::string family = t.name;
        CAPTURE(family);
        for (const bool causal : {false, true}) {
            CAPTURE(causal);
            std::vector<float> P = S;
            t.k->softmax_rows(P.data(), T, factor, causal);
            std::vector<double> ref(P.size(), 0.0), bound(P.size(), 0.0);
            for (int64_t i = 0; i < T; ++i) {
                const int64_t n = causal ? i + 1 : T;
                double mx = -1e300, sum = 0;
                for (int64_t j = 0; j < n; ++j) mx = std::max(mx, double(S[size_t(i * T + j)]) * factor);
                for (int64_t j = 0; j < n; ++j) sum += std::exp(double(S[size_t(i * T + j)]) * factor - mx);
                for (int64_t j = 0; j < n; ++j) {
                    const double z = double(S[size_t(i * T + j)]) * factor - mx;
                    ref[size_t(i * T + j)] = std::exp(z) / sum;
                    bound[size_t(i * T + j)] = (2.0 * (double(T) - z) + 16.0) * kU * ref[size_t(i * T + j)];
                }
            }
            // masked weights (bound 0): exactly 0
            off("softmax", P, ref, [&](size_t e) { return bound[e]; });
            // dS from these weights, in place in a copy of dP
            std::vector<float> d = dP;
            t.k->ds_rows(d.data(), P.data(), T, factor);
            std::vector<double> rds(d.size()), bds(d.size());
            for (int64_t i = 0; i < T; ++i) {
                double rs = 0, mag = 0;
                for (int64_t j = 0; j < T; ++j) {
                    rs += double(P[size_t(i * T + j)]) * dP[size_t(i * T + j)];
                    mag += std::fabs(double(P[size_t(i * T + j)]) * dP[size_t(i * T + j)]);
                }
                for (int64_t j = 0; j < T; ++j) {
                    const size_t e = size_t(i * T + j);
                    rds[e] = double(factor) * P[e] * (dP[e] - rs);
                    bds[e] = 2.0 * std::fabs(double(factor) * P[e]) *
                                 (double(T + 1) * kU * mag + 4.0 * kU * (std::fabs(dP[e]) + std::fabs(rs))) +
                             1e-30;
                }
            }
            off("dS", d, rds, [&](size_t e) { return bds[e]; });
        }
    }
}

// A NaN score makes its softmax row NaN (as torch.softmax, masked keys included), in a whole
// vector, in the tail or as the whole row; the exp's clamp to [-87, 88] must not turn it into a number. GELU of NaN
// is NaN too. The other rows keep their values.
TEST_CASE("cpu rows: a NaN score makes exactly its softmax row NaN on every table, and GELU keeps NaN") {
    const int64_t T = 37;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const Table& t : tables()) {
        const std::string family = t.name;
        CAPTURE(family);
        for (const bool causal : {false, true}) {
            CAPTURE(causal);
            std::vector<float> P = normals(6, T * T, 3.0f), clean = P;
            P[size_t(36 * T + 3)] = nan;                                // in a whole vector
            P[size_t(35 * T + 34)] = nan;                               // in the tail
            for (int64_t j = 0; j < T; ++j) P[size_t(20 * T + j)] = nan;  // the whole row
            t.k->softmax_rows(P.data(), T, 0.5f, causal);
            t.k->softmax_rows(clean.data(), T, 0.5f, causal);
            for (int64_t i = 0; i < T; ++i) {
                const bool nan_row = i == 20 || i == 35 || i == 36;  // each NaN is among its row's keys
                CAPTURE(i);
                for (int64_t j = 0; j < T; ++j) {
                    const float x = P[size_t(i * T + j)];
                    if (nan_row) CHECK(std::isnan(x));  // masked keys too: exp(-inf - NaN), as torch.softmax
                    else CHECK(x == clean[size_t(i * T + j)]);  // the causal mask's zeros included
                }
            }
        }
        const float x[16] = {nan, 1.0f, nan,  -2.0f, 0.5f, nan,  3.0f, -0.25f,
                             nan, 0.0f, 4.0f, -5.0f, nan,  6.0f, 1.5f, nan};
        float tanh_y[16], erf_y[16];
        t.k->gelu_forward(tanh_y, x, 16);
        t.k->gelu_erf_forward(erf_y, x, 16);
        for (int e = 0; e < 16; ++e) {
            CHECK(std::isnan(tanh_y[e]) == std::isnan(x[e]));
            CHECK(std::isnan(erf_y[e]) == std::isnan(x[e]));
        }
    }
}

TEST_CASE("cpu rows: the transposes of every table move every element exactly") {
    // row and column counts not multiples of 4, 8 or 16; strides past the matrix
    const int64_t rows = 19, cols = 10, lds = 13, ldd = 23;
    const std::vector<float> src = normals(8, rows * lds), base = normals(9, cols * ldd);
    for (const Table& t : tables()) {
        const std::string family = t.name;
        CAPTURE(family);
        for (const bool add : {false, true}) {
            CAPTURE(add);
            std::vector<float> dst = base;
            t.k->transpose(dst.data(), ldd, src.data(), rows, cols, lds, add);
            std::vector<float> want = base;
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) {
                    float& w = want[size_t(c * ldd + r)];
                    w = add ? w + src[size_t(r * lds + c)] : src[size_t(r * lds + c)];
                }
            CHECK(dst == want);  // and the padding past rows in each destination row untouched
        }
    }
}

TEST_CASE("cpu rows: the fast ops take the widest table this CPU runs") {
    const attn::rows::RowKernels* want = attn::cpu_has_avx512() && attn::rows::rows_avx512_kernels() != nullptr
                                             ? attn::rows::rows_avx512_kernels()
                                         : attn::cpu_has_avx2() && attn::rows::rows_avx2_kernels() != nullptr
                                             ? attn::rows::rows_avx2_kernels()
                                         : attn::cpu_has_neon() ? attn::rows::rows_neon_kernels()
                                                                : nullptr;
    CHECK((attn::rows::row_kernels() == want));
}
