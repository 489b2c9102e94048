// lib/cpu/src/flash/flash_avx512_traits.hpp: private. The AVX-512 SIMD traits of the flash
// kernel (see flash_kernel.hpp), shared by flash_avx512.cpp and flash_bf16.cpp.
// Include only inside an AVX-512 target region, after flash_kernel.hpp.
#pragma once

#include "flash_ftz.hpp"

namespace attn::flash_detail {
namespace {

struct Avx512 {
    using V = __m512;
    static constexpr int W = 16;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V finite_or_zero(V x) {
        const __mmask16 ninf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);
        return _mm512_mask_blend_ps(ninf, x, _mm512_setzero_ps());
    }
    // 2^x for x <= 0: x = n + f, n = floor(x), 0 <= f < 1. vreduceps (round down,
    // no fraction bits kept) gives f = x - floor(x) in one instruction, and
    // vscalefps multiplies by 2^floor(x) of the same x, so n is never formed.
    // 2^f by a degree-5 polynomial fitted to 2^f on [0, 1] for relative error
    // (iteratively reweighted least squares, coefficients rounded to float):
    // measured in float32 Horner over 2·10^6 points of [0, 1], relative error
    // < 1.6e-7 (the degree-6 Taylor polynomial on |f| <= 1/2 that this replaced
    // had < 2e-7, with a vrndscaleps, a subtraction, a clamp and one more FMA).
    // f rounds up to 1 for a tiny negative x (1 - 2^-30 is not a float): 2^1 ·
    // 2^-1 = 1, continuous, no harm. Below -126 the product is below the normal range:
    // a subnormal would cost a microcode assist on Intel cores (measured: ~40x slower per
    // vector; a sparse-mask block, mostly -inf, ran ~3x slower than a dense one), so every
    // kernel that uses these traits runs under FlushToZero (flash_ftz.hpp), and the result
    // is exactly 0 there, as in the AVX2 kernel. -inf gives 0 as well (vreduceps(-inf) = 0,
    // then 2^-inf = 0). That replaced a compare and a zero-mask on the vscalefps, one of
    // the ten vector instructions per 16 scores of the softmax pass. NaN stays NaN
    // (vreduceps, the FMAs and vscalefps all propagate it), so a NaN input reaches the
    // output as it does in the reference.
    static V exp2(V x) {
        const V f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        V p = _mm512_set1_ps(1.8775742501020432e-3f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.989345282316208e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.582631379365921e-2f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24015361070632935f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931530833244324f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.9999999403953552f));
        return _mm512_scalef_ps(p, x);
    }
};

}  // namespace
}  // namespace attn::flash_detail
