// lib/cpu/src/flash/flash_avx2_traits.hpp: private. The AVX2 + FMA SIMD traits of the flash
// kernels (see flash_kernel.hpp), shared by the forward (flash_avx2.cpp) and the
// backward (flash_backward_avx2.cpp). Include only inside an AVX2 target region,
// after flash_kernel.hpp.
#pragma once

#include "flash_ftz.hpp"

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
    // 2^x for x <= 0 as in the AVX-512 kernel, with 2^n built in the exponent bits.
    // n = round(x) by the magic-number add: t = x + (1.5 2^23 + 127) holds n + 127 in its
    // low mantissa bits (its ulp is 1 in [2^23, 2^24), rounding to nearest), so t << 23 is
    // the bit pattern of 2^n and t - magic is n, exactly; f = x - n in [-0.5, 0.5]. Four
    // instructions where vroundps (two uops), a subtraction, vcvtps2dq and the bias add took
    // six, on the ports the FMAs use. 2^f is a degree-5 polynomial fitted to the relative
    // error on [-0.5, 0.5]: 2.2e-7 at most evaluated in float32, as the degree-6 one it
    // replaced (the float32 rounding of Horner's steps dominates both). x is clamped at
    // -127: there n + 127 = 0, so the exponent field and the result are exactly 0, and so
    // masked (-inf) scores weigh exactly 0 as in the reference (-127 < x < -126.5 gives 0
    // too). -126.5 <= x < -126 would give a subnormal, and a subnormal result costs a
    // microcode assist on Intel cores, so the kernels that use exp2 run under
    // FlushToZero (flash_ftz.hpp): 0 there too, as the compare and mask after the product that
    // this replaced gave (two of the softmax pass's thirteen instructions per vector).
    // NaN stays NaN (vmaxps returns its second operand when either is NaN).
    static V exp2(V x) {
        x = _mm256_max_ps(_mm256_set1_ps(-127.0f), x);
        const V magic = _mm256_set1_ps(12582912.0f + 127.0f);
        const V t = _mm256_add_ps(x, magic);
        const V f = _mm256_sub_ps(x, _mm256_sub_ps(t, magic));
        V p = _mm256_set1_ps(1.327640376985073e-3f);
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.675518609583378e-3f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550713092088699e-2f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.24022120237350464f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.6931469440460205f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0000001192092896f));
        const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
        return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    }
};

}  // namespace
}  // namespace attn::flash_detail
