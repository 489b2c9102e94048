// The AVX-512 row kernels of the fast ops (rows.hpp), compiled for AVX-512 through a
// target pragma so that a portable build has them too. Standard headers come before the
// pragma so that only this file's own code is built for AVX-512.
#include "rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>


#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#include <immintrin.h>

namespace attn::train::detail {
namespace {

// dst[c * ldd + r] (=, or += when ADD) src[r * lds + c], r in [0, rows), c in [0, cols): each
// destination row of 16 floats is one gather down a source column (the scalar loops moved
// one float per load and store; attention's per-head transposes were a quarter of its own time)
template <bool ADD>
void transpose_gather(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds) {
    const __m512i step = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(static_cast<int>(lds)));
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t nr = std::min<int64_t>(16, rows - r0);
        const __mmask16 k = static_cast<__mmask16>((1u << nr) - 1u);
        const float* s = src + r0 * lds;
        for (int64_t r = 0; r < nr; r += 4) __builtin_prefetch(s + (16 + r) * lds);
        for (int64_t c = 0; c < cols; ++c) {
            __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, step, s + c, 4);
            float* d = dst + c * ldd + r0;
            if constexpr (ADD) v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, d), v);
            _mm512_mask_storeu_ps(d, k, v);
        }
    }
}

void transpose_avx512(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds, bool add) {
    if (add) transpose_gather<true>(dst, ldd, src, rows, cols, lds);
    else transpose_gather<false>(dst, ldd, src, rows, cols, lds);
}

// float LayerNorm rows for D a multiple of 16 where the CPU has AVX-512 (a CPU without it, or
// ATTN_ISA below avx512, takes the loops of fast_ops.cpp): the same
// formulas, each row's sums in 16 lanes reduced by one fixed shuffle tree
// (_mm512_reduce_add_ps), where the compiler's code for the lane loops below went through
// memory (LayerNorm took 8% of a training step).
void layernorm_forward_rows_avx512(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                   const float* b, int64_t N, int64_t D, float eps) {
    const float inv_d = 1.0f / static_cast<float>(D);
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * D;
        __m512 s = _mm512_setzero_ps();
        for (int64_t i = 0; i < D; i += 16) s = _mm512_add_ps(s, _mm512_loadu_ps(x + i));
        const float m = _mm512_reduce_add_ps(s) * inv_d;
        const __m512 vm = _mm512_set1_ps(m);
        __m512 q = _mm512_setzero_ps();
        for (int64_t i = 0; i < D; i += 16) {
            const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
            q = _mm512_fmadd_ps(d, d, q);
        }
        const float r = 1.0f / std::sqrt(_mm512_reduce_add_ps(q) * inv_d + eps);
        const __m512 vr = _mm512_set1_ps(r);
        float* o = out + n * D;
        for (int64_t i = 0; i < D; i += 16) {
            const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vr);
            _mm512_storeu_ps(o + i, _mm512_fmadd_ps(xh, _mm512_loadu_ps(w + i), _mm512_loadu_ps(b + i)));
        }
        mean[n] = m;
        rstd[n] = r;
    }
}

// dx (= or +=) r (g - mean(g) - xhat mean(g xhat)), g = dout w; dw += dout xhat; db += dout
void layernorm_backward_rows_avx512(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                    const float* w, const float* mean, const float* rstd, int64_t N, int64_t D,
                                    Into into) {
    const float inv_d = 1.0f / static_cast<float>(D);
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * D;
        const float* go = dout + n * D;
        float* dx = dinp + n * D;
        const __m512 vm = _mm512_set1_ps(mean[n]), vr = _mm512_set1_ps(rstd[n]);
        __m512 pg = _mm512_setzero_ps(), pgx = _mm512_setzero_ps();
        for (int64_t i = 0; i < D; i += 16) {
            const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vr);
            const __m512 g = _mm512_mul_ps(_mm512_loadu_ps(go + i), _mm512_loadu_ps(w + i));
            pg = _mm512_add_ps(pg, g);
            pgx = _mm512_fmadd_ps(g, xh, pgx);
        }
        const __m512 gm = _mm512_set1_ps(_mm512_reduce_add_ps(pg) * inv_d);
        const __m512 gxm = _mm512_set1_ps(_mm512_reduce_add_ps(pgx) * inv_d);
        for (int64_t i = 0; i < D; i += 16) {
            const __m512 gov = _mm512_loadu_ps(go + i);
            const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vr);
            const __m512 g = _mm512_mul_ps(gov, _mm512_loadu_ps(w + i));
            // r * (g - g_mean - xhat * gx_mean)
            __m512 d = _mm512_mul_ps(vr, _mm512_fnmadd_ps(xh, gxm, _mm512_sub_ps(g, gm)));
            if (into == Into::Add) d = _mm512_add_ps(_mm512_loadu_ps(dx + i), d);
            _mm512_storeu_ps(dx + i, d);
            _mm512_storeu_ps(dw + i, _mm512_fmadd_ps(gov, xh, _mm512_loadu_ps(dw + i)));
            _mm512_storeu_ps(db + i, _mm512_add_ps(_mm512_loadu_ps(db + i), gov));
        }
    }
}

// GELU (tanh form) in AVX-512 for float. With t = tanh(u),
// u = c (x + a x^3): 0.5 (1 + t) = s = sigmoid(2u) = 1 / (1 + exp(-2u)), so
//   GELU(x) = x s,   GELU'(x) = s + 2 x s (1 - s) c (1 + 3 a x^2)   (1 - t^2 = 4 s (1 - s)),
// one exp and one reciprocal per element: Eigen's tanh spent most of its time in a full
// division (the GELUs took 9% of a training step). exp: Cody-Waite reduction by ln 2 and
// Cephes' degree-6 polynomial (about 1 ulp); the reciprocal: rcp14 and one Newton step
// (about 1 ulp); GELU within a few float ulps of ops.cpp's formula (tests/test_train_ops.cpp).
__m512 exp_avx512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

// s = sigmoid(2u) = 1 / (1 + exp(-2u)) for u = c (x + a x^3)
__m512 gelu_sigmoid_avx512(__m512 x) {
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
    const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), exp_avx512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u)));
    const __m512 r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));  // r (2 - d r)
}

void gelu_forward_avx512(float* out, const float* inp, int64_t m) {
    int64_t i = 0;
    for (; i + 16 <= m; i += 16) {
        const __m512 x = _mm512_loadu_ps(inp + i);
        _mm512_storeu_ps(out + i, _mm512_mul_ps(x, gelu_sigmoid_avx512(x)));
    }
    if (i < m) {
        const __mmask16 k = static_cast<__mmask16>((1u << (m - i)) - 1u);
        const __m512 x = _mm512_maskz_loadu_ps(k, inp + i);
        _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(x, gelu_sigmoid_avx512(x)));
    }
}

// GELU'(x) dout, into dinp (= or +=); dinp may be dout itself
__m512 gelu_grad_avx512(__m512 x, __m512 dy) {
    const __m512 s = gelu_sigmoid_avx512(x);
    const __m512 k = _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f),
                                   _mm512_fmadd_ps(_mm512_set1_ps(3.0f * 0.044715f), _mm512_mul_ps(x, x), _mm512_set1_ps(1.0f)));
    const __m512 s1s = _mm512_mul_ps(s, _mm512_sub_ps(_mm512_set1_ps(1.0f), s));
    return _mm512_mul_ps(_mm512_fmadd_ps(_mm512_mul_ps(x, s1s), k, s), dy);
}

void gelu_backward_avx512(float* dinp, const float* inp, const float* dout, int64_t m, Into into) {
    int64_t i = 0;
    for (; i + 16 <= m; i += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(inp + i + 1024), _MM_HINT_T0);
        __m512 g = gelu_grad_avx512(_mm512_loadu_ps(inp + i), _mm512_loadu_ps(dout + i));
        if (into == Into::Add) g = _mm512_add_ps(_mm512_loadu_ps(dinp + i), g);
        _mm512_storeu_ps(dinp + i, g);
    }
    if (i < m) {
        const __mmask16 k = static_cast<__mmask16>((1u << (m - i)) - 1u);
        __m512 g = gelu_grad_avx512(_mm512_maskz_loadu_ps(k, inp + i), _mm512_maskz_loadu_ps(k, dout + i));
        if (into == Into::Add) g = _mm512_add_ps(_mm512_maskz_loadu_ps(k, dinp + i), g);
        _mm512_mask_storeu_ps(dinp + i, k, g);
    }
}

// The masked, stable softmax of attention's T rows of P (T, T) in place, each row scaled by
// factor first; row i keeps n = i + 1 keys when causal (the rest 0), else T. Three passes over
// a row in L1 (scale and max; exp and sum; normalise) with exp_avx512 (about 1 ulp): Eigen's
// five short passes per row took most of attention's own time in a training step.
void softmax_rows_avx512(float* P, int64_t T, float factor, bool causal) {
    const __m512 vf = _mm512_set1_ps(factor);
    for (int64_t i = 0; i < T; ++i) {
        float* row = P + i * T;
        const int64_t n = causal ? i + 1 : T;
        const int64_t full = n / 16 * 16;
        const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1u);
        __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < full; j += 16) {
            const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(row + j), vf);
            _mm512_storeu_ps(row + j, x);
            vmax = _mm512_max_ps(vmax, x);
        }
        if (tail) {
            const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, row + full), vf);
            _mm512_mask_storeu_ps(row + full, tail, x);
            vmax = _mm512_mask_max_ps(vmax, tail, vmax, x);
        }
        const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
        __m512 vs = _mm512_setzero_ps();
        for (int64_t j = 0; j < full; j += 16) {
            const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + j), vm));
            _mm512_storeu_ps(row + j, e);
            vs = _mm512_add_ps(vs, e);
        }
        if (tail) {
            const __m512 e = _mm512_maskz_mov_ps(tail, exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + full), vm)));
            _mm512_mask_storeu_ps(row + full, tail, e);
            vs = _mm512_add_ps(vs, e);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vs));
        for (int64_t j = 0; j < full; j += 16) _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), inv));
        if (tail) _mm512_mask_storeu_ps(row + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, row + full), inv));
        std::fill(row + n, row + T, 0.0f);
    }
}

// dS = factor * P o (dP - rowsum(P o dP)) over T rows of T, in place in dp: the row sum in
// 16 lanes, reduced by a fixed tree
void ds_rows_avx512(float* dp, const float* P, int64_t T, float factor) {
    const int64_t full = T / 16 * 16;
    const __mmask16 tail = static_cast<__mmask16>((1u << (T - full)) - 1u);
    const __m512 vf = _mm512_set1_ps(factor);
    for (int64_t i = 0; i < T; ++i) {
        float* d = dp + i * T;
        const float* p = P + i * T;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t j = 0; j < full; j += 16)
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(p + j), _mm512_loadu_ps(d + j), acc);
        if (tail) acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, p + full), _mm512_maskz_loadu_ps(tail, d + full), acc);
        const __m512 rs = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
        for (int64_t j = 0; j < full; j += 16) {
            const __m512 fp = _mm512_mul_ps(vf, _mm512_loadu_ps(p + j));
            _mm512_storeu_ps(d + j, _mm512_mul_ps(fp, _mm512_sub_ps(_mm512_loadu_ps(d + j), rs)));
        }
        if (tail) {
            const __m512 fp = _mm512_mul_ps(vf, _mm512_maskz_loadu_ps(tail, p + full));
            _mm512_mask_storeu_ps(d + full, tail, _mm512_mul_ps(fp, _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, d + full), rs)));
        }
    }
}

}  // namespace

const RowKernels* rows_avx512_kernels() {
    static const RowKernels kernels{&transpose_avx512,     &layernorm_forward_rows_avx512, &layernorm_backward_rows_avx512,
                                    &gelu_forward_avx512,  &gelu_backward_avx512,          &softmax_rows_avx512,
                                    &ds_rows_avx512,       "avx512"};
    return &kernels;
}

}  // namespace attn::train::detail
#pragma GCC pop_options

#else
namespace attn::train::detail {
const RowKernels* rows_avx512_kernels() { return nullptr; }
}  // namespace attn::train::detail
#endif
