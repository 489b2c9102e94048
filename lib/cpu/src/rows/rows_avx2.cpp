// The AVX2 + FMA row kernels of the fast ops (attn/cpu/rows.hpp): rows_kernel.hpp over 16 lanes held
// in a pair of ymm registers, so that each row's sums have the lanes and the reduction tree
// of the AVX-512 kernels (the LayerNorm sums are theirs bit for bit), and the gather
// transposes. exp builds 2^n in the exponent bits instead of vscalefps (the same value for
// the clamped range); the GELU's reciprocal is a division where AVX-512 has rcp14 and a
// Newton step. Compiled through a target pragma;
// chosen at run time where the CPU has AVX2 and FMA but not AVX-512 (or ATTN_ISA=avx2).
#include "attn/cpu/rows.hpp"

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

#include "rows_kernel.hpp"

namespace attn::rows {
namespace {

inline __m256i lane_mask(int64_t n) {  // the first n of 8 lanes, n clamped to [0, 8]
    const int k = static_cast<int>(std::clamp<int64_t>(n, 0, 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// exp as Avx512Lanes::exp (rows_avx512.cpp), 2^n put in the exponent bits: n is in [-126, 127]
// for the clamped x, a normal float
__m256 exp8(__m256 x) {
    // x second: max and min return their second operand when either is NaN, so NaN stays NaN
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
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

// 16 lanes as two ymm registers (rows_kernel.hpp): lanes 0-7 in lo, 8-15 in hi
struct Avx2Lanes {
    struct V {
        __m256 lo, hi;
    };
    static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
    static V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static void store(float* p, V v) {
        _mm256_storeu_ps(p, v.lo);
        _mm256_storeu_ps(p + 8, v.hi);
    }
    static V load_n(const float* p, int64_t n) {
        return {_mm256_maskload_ps(p, lane_mask(n)), _mm256_maskload_ps(p + 8, lane_mask(n - 8))};
    }
    static void store_n(float* p, V v, int64_t n) {
        _mm256_maskstore_ps(p, lane_mask(n), v.lo);
        _mm256_maskstore_ps(p + 8, lane_mask(n - 8), v.hi);
    }
    static V add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
    static V sub(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
    static V mul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
    static V max(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
    static V fmadd(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
    static V fnmadd(V a, V b, V c) { return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)}; }
    static V keep_n(V v, int64_t n, float f) {
        const __m256 fill = _mm256_set1_ps(f);
        return {_mm256_blendv_ps(fill, v.lo, _mm256_castsi256_ps(lane_mask(n))),
                _mm256_blendv_ps(fill, v.hi, _mm256_castsi256_ps(lane_mask(n - 8)))};
    }
    // the tree of _mm512_reduce_add_ps / _reduce_max_ps
    static float reduce_add(V v) {
        const __m256 h8 = _mm256_add_ps(v.lo, v.hi);
        const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
        const __m128 h2 = _mm_add_ps(h4, _mm_shuffle_ps(h4, h4, 0x4e));
        return _mm_cvtss_f32(_mm_add_ps(h2, _mm_shuffle_ps(h2, h2, 0xb1)));
    }
    static float reduce_max(V v) {
        const __m256 h8 = _mm256_max_ps(v.lo, v.hi);
        const __m128 h4 = _mm_max_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
        const __m128 h2 = _mm_max_ps(h4, _mm_shuffle_ps(h4, h4, 0x4e));
        return _mm_cvtss_f32(_mm_max_ps(h2, _mm_shuffle_ps(h2, h2, 0xb1)));
    }
    static V exp(V x) { return {exp8(x.lo), exp8(x.hi)}; }
    // a true division: vrcpps with Newton steps left s one ulp below 1 for large x, which
    // GELU' multiplies by x k (s (1 - s) = 6e-8 times 265 at x = 10.5: 1.6e-5 off)
    static V recip(V d) {
        const __m256 one = _mm256_set1_ps(1.0f);
        return {_mm256_div_ps(one, d.lo), _mm256_div_ps(one, d.hi)};
    }
};

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

}  // namespace

const RowKernels* rows_avx2_kernels() { return row_kernel_table<Avx2Lanes, &transpose_avx2>(); }

}  // namespace attn::rows
#pragma GCC pop_options

#else
namespace attn::rows {
const RowKernels* rows_avx2_kernels() { return nullptr; }
}  // namespace attn::rows
#endif
