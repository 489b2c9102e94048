// The AVX2 + FMA row kernels of the fast ops (rows.hpp): the AVX-512 ones of rows_avx512.cpp
// written over a 16-lane pair of ymm registers (V16), so that each row's sums have the same
// 16 lanes and the same reduction tree as there (lane l takes elements l, l + 16, ...; then
// l + 8, l + 4, l + 2, l + 1 are added, the tree of _mm512_reduce_add_ps): the LayerNorm
// sums are the AVX-512 ones bit for bit. exp builds 2^n in the exponent bits instead of
// vscalefps (the same value for the clamped range); the GELU's reciprocal is a division
// where AVX-512 has rcp14 and a Newton step. Compiled through a target pragma;
// chosen at run time where the CPU has AVX2 and FMA but not AVX-512 (or ATTN_ISA=avx2).
#include "rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "attn/cpu/features.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace attn::train::detail {
namespace {

// 16 float lanes as two ymm registers: lanes 0-7 in lo, 8-15 in hi.
struct V16 {
    __m256 lo, hi;
};
inline __m256i lane_mask(int64_t n) {  // the first n of 8 lanes, n clamped to [0, 8]
    const int k = static_cast<int>(std::clamp<int64_t>(n, 0, 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V16 set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
inline V16 zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V16 load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store(float* p, V16 v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
// the first n lanes (n in [0, 16]), 0 elsewhere
inline V16 load_n(const float* p, int64_t n) {
    return {_mm256_maskload_ps(p, lane_mask(n)), _mm256_maskload_ps(p + 8, lane_mask(n - 8))};
}
inline void store_n(float* p, V16 v, int64_t n) {
    _mm256_maskstore_ps(p, lane_mask(n), v.lo);
    _mm256_maskstore_ps(p + 8, lane_mask(n - 8), v.hi);
}
inline V16 add(V16 a, V16 b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V16 sub(V16 a, V16 b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V16 mul(V16 a, V16 b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V16 max(V16 a, V16 b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline V16 fmadd(V16 a, V16 b, V16 c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
inline V16 fnmadd(V16 a, V16 b, V16 c) { return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)}; }
// the tree of _mm512_reduce_add_ps / _reduce_max_ps: (l, l+8), (l, l+4), (l, l+2), (l, l+1)
template <class Op>
inline float reduce(V16 v, Op op) {
    const __m256 h8 = op(v.lo, v.hi);
    const __m128 h4 = op(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = op(h4, _mm_shuffle_ps(h4, h4, 0x4e));
    const __m128 h1 = op(h2, _mm_shuffle_ps(h2, h2, 0xb1));
    return _mm_cvtss_f32(h1);
}
inline float reduce_add(V16 v) {
    return reduce(v, [](auto a, auto b) {
        if constexpr (sizeof(a) == 32) return _mm256_add_ps(a, b);
        else return _mm_add_ps(a, b);
    });
}
inline float reduce_max(V16 v) {
    return reduce(v, [](auto a, auto b) {
        if constexpr (sizeof(a) == 32) return _mm256_max_ps(a, b);
        else return _mm_max_ps(a, b);
    });
}

// dst[c * ldd + r] (=, or += when ADD) src[r * lds + c]: each destination run of 8 floats is
// one gather down a source column
template <bool ADD>
void transpose_gather(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds) {
    const __m256i step =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int>(lds)));
    for (int64_t r0 = 0; r0 < rows; r0 += 8) {
        const int64_t nr = std::min<int64_t>(8, rows - r0);
        const __m256i k = lane_mask(nr);
        const float* s = src + r0 * lds;
        for (int64_t c = 0; c < cols; ++c) {
            __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), s + c, step, _mm256_castsi256_ps(k), 4);
            float* d = dst + c * ldd + r0;
            if constexpr (ADD) v = _mm256_add_ps(_mm256_maskload_ps(d, k), v);
            _mm256_maskstore_ps(d, k, v);
        }
    }
}

void transpose_avx2(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds, bool add) {
    if (add) transpose_gather<true>(dst, ldd, src, rows, cols, lds);
    else transpose_gather<false>(dst, ldd, src, rows, cols, lds);
}

// LayerNorm rows, D a multiple of 16: rows_avx512.cpp's formulas and sums
void layernorm_forward_rows_avx2(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                 int64_t N, int64_t D, float eps) {
    const float inv_d = 1.0f / static_cast<float>(D);
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * D;
        V16 s = zero();
        for (int64_t i = 0; i < D; i += 16) s = add(s, load(x + i));
        const float m = reduce_add(s) * inv_d;
        const V16 vm = set1(m);
        V16 q = zero();
        for (int64_t i = 0; i < D; i += 16) {
            const V16 d = sub(load(x + i), vm);
            q = fmadd(d, d, q);
        }
        const float r = 1.0f / std::sqrt(reduce_add(q) * inv_d + eps);
        const V16 vr = set1(r);
        float* o = out + n * D;
        for (int64_t i = 0; i < D; i += 16) store(o + i, fmadd(mul(sub(load(x + i), vm), vr), load(w + i), load(b + i)));
        mean[n] = m;
        rstd[n] = r;
    }
}

void layernorm_backward_rows_avx2(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                                  const float* mean, const float* rstd, int64_t N, int64_t D, Into into) {
    const float inv_d = 1.0f / static_cast<float>(D);
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * D;
        const float* go = dout + n * D;
        float* dx = dinp + n * D;
        const V16 vm = set1(mean[n]), vr = set1(rstd[n]);
        V16 pg = zero(), pgx = zero();
        for (int64_t i = 0; i < D; i += 16) {
            const V16 xh = mul(sub(load(x + i), vm), vr);
            const V16 g = mul(load(go + i), load(w + i));
            pg = add(pg, g);
            pgx = fmadd(g, xh, pgx);
        }
        const V16 gm = set1(reduce_add(pg) * inv_d), gxm = set1(reduce_add(pgx) * inv_d);
        for (int64_t i = 0; i < D; i += 16) {
            const V16 gov = load(go + i);
            const V16 xh = mul(sub(load(x + i), vm), vr);
            const V16 g = mul(gov, load(w + i));
            V16 d = mul(vr, fnmadd(xh, gxm, sub(g, gm)));  // r (g - g_mean - xhat gx_mean)
            if (into == Into::Add) d = add(load(dx + i), d);
            store(dx + i, d);
            store(dw + i, fmadd(gov, xh, load(dw + i)));
            store(db + i, add(load(db + i), gov));
        }
    }
}

// exp as rows_avx512.cpp's exp_avx512 (Cody-Waite by ln 2, Cephes' degree-6 polynomial), 2^n
// put in the exponent bits: n is in [-126, 127] for the clamped x, a normal float
__m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
inline V16 exp16(V16 x) { return {exp8(x.lo), exp8(x.hi)}; }

// s = sigmoid(2u) = 1 / (1 + exp(-2u)), u = c (x + a x^3): see rows_avx512.cpp
__m256 gelu_sigmoid8(__m256 x) {
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
    const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u)));
    // a true division: vrcpps with Newton steps left s one ulp below 1 for large x, which
    // GELU' multiplies by x k (s (1 - s) = 6e-8 x 265 at x = 10.5: 1.6e-5 off)
    return _mm256_div_ps(_mm256_set1_ps(1.0f), d);
}

void gelu_forward_avx2(float* out, const float* inp, int64_t m) {
    int64_t i = 0;
    for (; i + 8 <= m; i += 8) {
        const __m256 x = _mm256_loadu_ps(inp + i);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(x, gelu_sigmoid8(x)));
    }
    if (i < m) {
        const __m256i k = lane_mask(m - i);
        const __m256 x = _mm256_maskload_ps(inp + i, k);
        _mm256_maskstore_ps(out + i, k, _mm256_mul_ps(x, gelu_sigmoid8(x)));
    }
}

__m256 gelu_grad8(__m256 x, __m256 dy) {
    const __m256 s = gelu_sigmoid8(x);
    const __m256 k = _mm256_mul_ps(_mm256_set1_ps(2.0f * 0.7978845608028654f),
                                   _mm256_fmadd_ps(_mm256_set1_ps(3.0f * 0.044715f), _mm256_mul_ps(x, x), _mm256_set1_ps(1.0f)));
    const __m256 s1s = _mm256_mul_ps(s, _mm256_sub_ps(_mm256_set1_ps(1.0f), s));
    return _mm256_mul_ps(_mm256_fmadd_ps(_mm256_mul_ps(x, s1s), k, s), dy);
}

void gelu_backward_avx2(float* dinp, const float* inp, const float* dout, int64_t m, Into into) {
    int64_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m256 g = gelu_grad8(_mm256_loadu_ps(inp + i), _mm256_loadu_ps(dout + i));
        if (into == Into::Add) g = _mm256_add_ps(_mm256_loadu_ps(dinp + i), g);
        _mm256_storeu_ps(dinp + i, g);
    }
    if (i < m) {
        const __m256i k = lane_mask(m - i);
        __m256 g = gelu_grad8(_mm256_maskload_ps(inp + i, k), _mm256_maskload_ps(dout + i, k));
        if (into == Into::Add) g = _mm256_add_ps(_mm256_maskload_ps(dinp + i, k), g);
        _mm256_maskstore_ps(dinp + i, k, g);
    }
}

// attention's masked, stable softmax rows in place (see rows_avx512.cpp): 16 lanes a step
void softmax_rows_avx2(float* P, int64_t T, float factor, bool causal) {
    const V16 vf = set1(factor);
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < T; ++i) {
        float* row = P + i * T;
        const int64_t n = causal ? i + 1 : T;
        const int64_t full = n / 16 * 16, tail = n - full;
        V16 vmax = set1(ninf);
        for (int64_t j = 0; j < full; j += 16) {
            const V16 x = mul(load(row + j), vf);
            store(row + j, x);
            vmax = max(vmax, x);
        }
        if (tail) {
            const V16 x = mul(load_n(row + full, tail), vf);
            store_n(row + full, x, tail);
            // lanes past the tail are 0 in x: keep them out of the max
            const V16 xm = {_mm256_blendv_ps(_mm256_set1_ps(ninf), x.lo, _mm256_castsi256_ps(lane_mask(tail))),
                            _mm256_blendv_ps(_mm256_set1_ps(ninf), x.hi, _mm256_castsi256_ps(lane_mask(tail - 8)))};
            vmax = max(vmax, xm);
        }
        const V16 vm = set1(reduce_max(vmax));
        V16 vs = zero();
        for (int64_t j = 0; j < full; j += 16) {
            const V16 e = exp16(sub(load(row + j), vm));
            store(row + j, e);
            vs = add(vs, e);
        }
        if (tail) {
            V16 e = exp16(sub(load_n(row + full, tail), vm));
            e = {_mm256_and_ps(e.lo, _mm256_castsi256_ps(lane_mask(tail))),
                 _mm256_and_ps(e.hi, _mm256_castsi256_ps(lane_mask(tail - 8)))};
            store_n(row + full, e, tail);
            vs = add(vs, e);
        }
        const V16 inv = set1(1.0f / reduce_add(vs));
        for (int64_t j = 0; j < full; j += 16) store(row + j, mul(load(row + j), inv));
        if (tail) store_n(row + full, mul(load_n(row + full, tail), inv), tail);
        std::fill(row + n, row + T, 0.0f);
    }
}

// dS = factor * P o (dP - rowsum(P o dP)) in place in dp, the row sum in 16 lanes
void ds_rows_avx2(float* dp, const float* P, int64_t T, float factor) {
    const int64_t full = T / 16 * 16, tail = T - full;
    const V16 vf = set1(factor);
    for (int64_t i = 0; i < T; ++i) {
        float* d = dp + i * T;
        const float* p = P + i * T;
        V16 acc = zero();
        for (int64_t j = 0; j < full; j += 16) acc = fmadd(load(p + j), load(d + j), acc);
        if (tail) acc = fmadd(load_n(p + full, tail), load_n(d + full, tail), acc);
        const V16 rs = set1(reduce_add(acc));
        for (int64_t j = 0; j < full; j += 16) store(d + j, mul(mul(vf, load(p + j)), sub(load(d + j), rs)));
        if (tail) store_n(d + full, mul(mul(vf, load_n(p + full, tail)), sub(load_n(d + full, tail), rs)), tail);
    }
}

}  // namespace

const RowKernels* rows_avx2_kernels() {
    static const RowKernels kernels{&transpose_avx2,    &layernorm_forward_rows_avx2, &layernorm_backward_rows_avx2,
                                    &gelu_forward_avx2, &gelu_backward_avx2,          &softmax_rows_avx2,
                                    &ds_rows_avx2,      "avx2"};
    return &kernels;
}

}  // namespace attn::train::detail
#pragma GCC pop_options

#else
namespace attn::train::detail {
const RowKernels* rows_avx2_kernels() { return nullptr; }
}  // namespace attn::train::detail
#endif
