// lib/cpu/src/flash_avx2_traits.hpp: private. The AVX2 + FMA SIMD traits of the flash
// kernels (see flash_kernel.hpp), shared by the forward (flash_avx2.cpp) and the
// backward (flash_backward_avx2.cpp). Include only inside an AVX2 target region,
// after flash_kernel.hpp.
#pragma once

namespace attn::flash_detail {
namespace {

struct Avx2 {
    using V = __m256;
    static constexpr int W = 8;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V finite_or_zero(V x) {
        const V ninf = _mm256_cmp_ps(x, _mm256_set1_ps(kNegInf), _CMP_EQ_OQ);
        return _mm256_andnot_ps(ninf, x);
    }
    // 2^x for x <= 0 as in the AVX-512 kernel, with 2^n built in the exponent
    // bits. Below -126 (outside the normal range) the result is exactly 0, so
    // masked (-inf) scores weigh exactly 0 as in the reference; NaN stays NaN
    // (vmaxps returns its second operand when either is NaN).
    static V exp2(V x) {
        const V tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);  // true for -inf, false for NaN
        x = _mm256_max_ps(_mm256_set1_ps(-126.0f), x);
        const V n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const V f = _mm256_sub_ps(x, n);
        V p = _mm256_set1_ps(1.5403530393381608e-4f);
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618129107628477e-3f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550410866482158e-2f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.2402265069591007f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.6931471805599453f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
    }
};

}  // namespace
}  // namespace attn::flash_detail
