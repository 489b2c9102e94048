// lib/cpu/src/rows/rows_kernel.hpp: private. The row kernels of the fast ops (attn/cpu/rows.hpp), written once
// over a 16-lane float traits type L, and included by rows_avx512.cpp (one zmm register),
// rows_avx2.cpp (a pair of ymm registers) inside their target regions, after <immintrin.h>, and
// rows_neon.cpp (four q registers). Sixteen lanes on all, so every row sum has the same lanes
// (lane l takes elements l, l + 16, ...) and the same reduction tree (L::reduce_add): the sums
// are the same bits on all. row_kernel_table<L, transpose> gives each file's RowKernels.
//
//   L::V              16 floats
//   zero, set1, load, store; load_n / store_n: the first n lanes (n in [0, 16]), 0 elsewhere
//   add, sub, mul, max, fmadd (a b + c), fnmadd (c - a b)
//   keep_n(v, n, f)   lanes >= n replaced by f
//   reduce_add, reduce_max: the tree (l, l+8), (l, l+4), (l, l+2), (l, l+1)
//   exp               Cody-Waite by ln 2 and Cephes' degree-6 polynomial (about 1 ulp), input
//                     clamped to [-87, 88]; NaN stays NaN (so a NaN score makes its softmax row NaN)
//   recip             1/d for the GELU's sigmoid and erf (AVX-512: rcp14 and a Newton step)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "attn/cpu/rows.hpp"

namespace attn::rows {
namespace {

template <class L>
struct Rows {
    using V = typename L::V;

    // float LayerNorm rows, D a multiple of 16: each row's sums in 16 lanes reduced by one
    // fixed tree, where the compiler's code for the plain lane loops went through memory
    // (LayerNorm took 8% of a training step)
    static void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                  const float* b, int64_t N, int64_t D, float eps) {
        const float inv_d = 1.0f / static_cast<float>(D);
        for (int64_t n = 0; n < N; ++n) {
            const float* x = inp + n * D;
            V s = L::zero();
            for (int64_t i = 0; i < D; i += 16) s = L::add(s, L::load(x + i));
            const float m = L::reduce_add(s) * inv_d;
            const V vm = L::set1(m);
            V q = L::zero();
            for (int64_t i = 0; i < D; i += 16) {
                const V d = L::sub(L::load(x + i), vm);
                q = L::fmadd(d, d, q);
            }
            const float r = 1.0f / std::sqrt(L::reduce_add(q) * inv_d + eps);
            const V vr = L::set1(r);
            float* o = out + n * D;
            for (int64_t i = 0; i < D; i += 16)
                L::store(o + i, L::fmadd(L::mul(L::sub(L::load(x + i), vm), vr), L::load(w + i), L::load(b + i)));
            mean[n] = m;
            rstd[n] = r;
        }
    }

    // dx (= or +=) r (g - mean(g) - xhat mean(g xhat)), g = dout w; dw += dout xhat; db += dout
    static void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                   const float* w, const float* mean, const float* rstd, int64_t N, int64_t D,
                                   bool add) {
        const float inv_d = 1.0f / static_cast<float>(D);
        for (int64_t n = 0; n < N; ++n) {
            const float* x = inp + n * D;
            const float* go = dout + n * D;
            float* dx = dinp + n * D;
            const V vm = L::set1(mean[n]), vr = L::set1(rstd[n]);
            V pg = L::zero(), pgx = L::zero();
            for (int64_t i = 0; i < D; i += 16) {
                const V xh = L::mul(L::sub(L::load(x + i), vm), vr);
                const V g = L::mul(L::load(go + i), L::load(w + i));
                pg = L::add(pg, g);
                pgx = L::fmadd(g, xh, pgx);
            }
            const V gm = L::set1(L::reduce_add(pg) * inv_d), gxm = L::set1(L::reduce_add(pgx) * inv_d);
            for (int64_t i = 0; i < D; i += 16) {
                const V gov = L::load(go + i);
                const V xh = L::mul(L::sub(L::load(x + i), vm), vr);
                const V g = L::mul(gov, L::load(w + i));
                V d = L::mul(vr, L::fnmadd(xh, gxm, L::sub(g, gm)));  // r (g - g_mean - xhat gx_mean)
                if (add) d = L::add(L::load(dx + i), d);
                L::store(dx + i, d);
                L::store(dw + i, L::fmadd(gov, xh, L::load(dw + i)));
                L::store(db + i, L::add(L::load(db + i), gov));
            }
        }
    }

    // GELU (tanh form). With t = tanh(u), u = c (x + a x^3): 0.5 (1 + t) = s = sigmoid(2u)
    // = 1 / (1 + exp(-2u)), so GELU(x) = x s and GELU'(x) = s + 2 x s (1 - s) c (1 + 3 a x^2)
    // (1 - t^2 = 4 s (1 - s)): one exp and one reciprocal per element, where Eigen's tanh
    // spent most of its time in a full division (the GELUs took 9% of a training step);
    // within a few float ulps of ops.cpp's formula (tests/test_nn_ops.cpp).
    static V gelu_sigmoid(V x) {
        const V x3 = L::mul(L::mul(x, x), x);
        const V u = L::mul(L::set1(0.7978845608028654f), L::fmadd(L::set1(0.044715f), x3, x));
        return L::recip(L::add(L::set1(1.0f), L::exp(L::mul(L::set1(-2.0f), u))));
    }
    static V gelu_grad(V x, V dy) {
        const V s = gelu_sigmoid(x);
        const V k = L::mul(L::set1(2.0f * 0.7978845608028654f),
                           L::fmadd(L::set1(3.0f * 0.044715f), L::mul(x, x), L::set1(1.0f)));
        const V s1s = L::mul(s, L::sub(L::set1(1.0f), s));
        return L::mul(L::fmadd(L::mul(x, s1s), k, s), dy);
    }
    static V gelu_value(V x) { return L::mul(x, gelu_sigmoid(x)); }

    // erf by Eigen's rational approximation for float (its generic_fast_erf_float, the one the
    // encoder used before): z clamped to [-4, 4], where erf is +-1 in float, then
    // z P(z^2) / Q(z^2) with P of degree 6 and Q of degree 4; the division as L::recip. Within
    // a few float ulps of erf (tests/test_cpu_rows.cpp).
    static V erf(V z) {
        z = L::max(z, L::set1(-4.0f));
        z = L::sub(L::zero(), L::max(L::sub(L::zero(), z), L::set1(-4.0f)));  // min(z, 4), negation is exact
        const V z2 = L::mul(z, z);
        V p = L::fmadd(z2, L::set1(-2.72614225801306e-10f), L::set1(2.77068142495902e-08f));
        p = L::fmadd(z2, p, L::set1(-2.10102402082508e-06f));
        p = L::fmadd(z2, p, L::set1(-5.69250639462346e-05f));
        p = L::fmadd(z2, p, L::set1(-7.34990630326855e-04f));
        p = L::fmadd(z2, p, L::set1(-2.95459980854025e-03f));
        p = L::fmadd(z2, p, L::set1(-1.60960333262415e-02f));
        p = L::mul(z, p);
        V q = L::fmadd(z2, L::set1(-1.45660718464996e-05f), L::set1(-2.13374055278905e-04f));
        q = L::fmadd(z2, q, L::set1(-1.68282697438203e-03f));
        q = L::fmadd(z2, q, L::set1(-7.37332916720468e-03f));
        q = L::fmadd(z2, q, L::set1(-1.42647390514189e-02f));
        return L::mul(p, L::recip(q));
    }
    // GELU (erf form): Phi(x) = 0.5 (1 + erf(x / sqrt 2)), GELU(x) = x Phi(x),
    // GELU'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    static V normal_cdf(V x) {
        return L::mul(L::set1(0.5f), L::add(L::set1(1.0f), erf(L::mul(x, L::set1(0.70710678118654752f)))));
    }
    static V gelu_erf_value(V x) {
        return L::mul(L::mul(L::set1(0.5f), x),
                      L::add(L::set1(1.0f), erf(L::mul(x, L::set1(0.70710678118654752f)))));
    }
    static V gelu_erf_grad(V x, V dy) {
        const V pdf = L::mul(L::set1(0.39894228040143268f), L::exp(L::mul(L::set1(-0.5f), L::mul(x, x))));
        return L::mul(L::fmadd(x, pdf, normal_cdf(x)), dy);
    }

    // out = F(inp) elementwise over m floats; out may be inp
    template <V (*F)(V)>
    static void map_forward(float* out, const float* inp, int64_t m) {
        int64_t i = 0;
        for (; i + 16 <= m; i += 16) L::store(out + i, F(L::load(inp + i)));
        if (i < m) L::store_n(out + i, F(L::load_n(inp + i, m - i)), m - i);
    }
    // G(inp, dout) into dinp (= or +=) over m floats; dinp may be dout itself
    template <V (*G)(V, V)>
    static void map_backward(float* dinp, const float* inp, const float* dout, int64_t m, bool add) {
        int64_t i = 0;
        for (; i + 16 <= m; i += 16) {
            __builtin_prefetch(inp + i + 1024);
            V g = G(L::load(inp + i), L::load(dout + i));
            if (add) g = L::add(L::load(dinp + i), g);
            L::store(dinp + i, g);
        }
        if (i < m) {
            const int64_t n = m - i;
            V g = G(L::load_n(inp + i, n), L::load_n(dout + i, n));
            if (add) g = L::add(L::load_n(dinp + i, n), g);
            L::store_n(dinp + i, g, n);
        }
    }
    static void gelu_forward(float* out, const float* inp, int64_t m) { map_forward<&gelu_value>(out, inp, m); }
    static void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t m, bool add) {
        map_backward<&gelu_grad>(dinp, inp, dout, m, add);
    }
    static void gelu_erf_forward(float* out, const float* inp, int64_t m) {
        map_forward<&gelu_erf_value>(out, inp, m);
    }
    static void gelu_erf_backward(float* dinp, const float* inp, const float* dout, int64_t m, bool add) {
        map_backward<&gelu_erf_grad>(dinp, inp, dout, m, add);
    }

    // The masked, stable softmax of attention's T rows of P (T, T) in place, each row scaled by
    // factor first; row i keeps n = i + 1 keys when causal (the rest 0), else T. Three passes over
    // a row in L1 (scale and max; exp and sum; normalise): Eigen's five short passes per row took
    // most of attention's own time in a training step.
    static void softmax_rows(float* P, int64_t T, float factor, bool causal) {
        const V vf = L::set1(factor);
        const float ninf = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < T; ++i) {
            float* row = P + i * T;
            const int64_t n = causal ? i + 1 : T;
            const int64_t full = n / 16 * 16, tail = n - full;
            V vmax = L::set1(ninf);
            for (int64_t j = 0; j < full; j += 16) {
                const V x = L::mul(L::load(row + j), vf);
                L::store(row + j, x);
                vmax = L::max(vmax, x);
            }
            if (tail) {
                const V x = L::mul(L::load_n(row + full, tail), vf);
                L::store_n(row + full, x, tail);
                vmax = L::max(vmax, L::keep_n(x, tail, ninf));
            }
            const V vm = L::set1(L::reduce_max(vmax));
            V vs = L::zero();
            for (int64_t j = 0; j < full; j += 16) {
                const V e = L::exp(L::sub(L::load(row + j), vm));
                L::store(row + j, e);
                vs = L::add(vs, e);
            }
            if (tail) {
                const V e = L::keep_n(L::exp(L::sub(L::load_n(row + full, tail), vm)), tail, 0.0f);
                L::store_n(row + full, e, tail);
                vs = L::add(vs, e);
            }
            const float sum = L::reduce_add(vs);
            const V inv = L::set1(1.0f / sum);
            for (int64_t j = 0; j < full; j += 16) L::store(row + j, L::mul(L::load(row + j), inv));
            if (tail) L::store_n(row + full, L::mul(L::load_n(row + full, tail), inv), tail);
            // the masked keys: 0, or NaN in a NaN row (torch.softmax's exp(-inf - NaN))
            std::fill(row + n, row + T, std::isnan(sum) ? sum : 0.0f);
        }
    }

    // dS = factor * P o (dP - rowsum(P o dP)) over T rows of T, in place in dp
    static void ds_rows(float* dp, const float* P, int64_t T, float factor) {
        const int64_t full = T / 16 * 16, tail = T - full;
        const V vf = L::set1(factor);
        for (int64_t i = 0; i < T; ++i) {
            float* d = dp + i * T;
            const float* p = P + i * T;
            V acc = L::zero();
            for (int64_t j = 0; j < full; j += 16) acc = L::fmadd(L::load(p + j), L::load(d + j), acc);
            if (tail) acc = L::fmadd(L::load_n(p + full, tail), L::load_n(d + full, tail), acc);
            const V rs = L::set1(L::reduce_add(acc));
            for (int64_t j = 0; j < full; j += 16)
                L::store(d + j, L::mul(L::mul(vf, L::load(p + j)), L::sub(L::load(d + j), rs)));
            if (tail)
                L::store_n(d + full,
                           L::mul(L::mul(vf, L::load_n(p + full, tail)), L::sub(L::load_n(d + full, tail), rs)), tail);
        }
    }
};

// The table of one instruction set: its transpose and Rows<L>'s kernels, in RowKernels' order.
template <class L, auto Transpose>
const RowKernels* row_kernel_table() {
    using R = Rows<L>;
    static const RowKernels kernels{Transpose,           &R::layernorm_forward,    &R::layernorm_backward,
                                    &R::gelu_forward,    &R::gelu_backward,        &R::gelu_erf_forward,
                                    &R::gelu_erf_backward, &R::softmax_rows,       &R::ds_rows};
    return &kernels;
}

}  // namespace
}  // namespace attn::rows
