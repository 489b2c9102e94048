// The AVX-512 row kernels of the fast ops (attn/cpu/rows.hpp): rows_kernel.hpp on one zmm register, and
// the gather transposes; compiled for AVX-512 through a target pragma so that a portable build
// has them too. Standard headers come before the pragma so that only this file's own code is
// built for AVX-512.
#include "attn/cpu/rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>


#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#include <immintrin.h>

#include "rows_kernel.hpp"

namespace attn::rows {
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

// 16 lanes in one zmm register (rows_kernel.hpp)
struct Avx512Lanes {
    using V = __m512;
    static __mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }
    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V load_n(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
    static void store_n(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
    static V keep_n(V v, int64_t n, float f) { return _mm512_mask_blend_ps(first(n), _mm512_set1_ps(f), v); }
    static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
    static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
    static V exp(V x) {
        // x second: max and min return their second operand when either is NaN, so NaN stays NaN
        x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
        const V n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
        r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
        V p = _mm512_set1_ps(1.9875691500e-4f);
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
        p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
        return _mm512_scalef_ps(p, n);
    }
    // rcp14 and one Newton step, r (2 - d r): about 1 ulp
    static V recip(V d) {
        const V r = _mm512_rcp14_ps(d);
        return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
    }
};

}  // namespace

const RowKernels* rows_avx512_kernels() { return row_kernel_table<Avx512Lanes, &transpose_avx512>(); }

}  // namespace attn::rows
#pragma GCC pop_options

#else
namespace attn::rows {
const RowKernels* rows_avx512_kernels() { return nullptr; }
}  // namespace attn::rows
#endif
