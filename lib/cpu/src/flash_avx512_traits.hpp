// lib/cpu/src/flash_avx512_traits.hpp: private. The AVX-512 SIMD traits of the flash
// kernel (see flash_kernel.hpp), shared by flash_avx512.cpp and flash_bf16.cpp.
// Include only inside an AVX-512 target region, after flash_kernel.hpp.
#pragma once

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
    // 2^x for x <= 0: x = n + f, n = round(x), |f| <= 1/2; 2^f by its Taylor
    // polynomial of degree 6 (relative error < 2e-7 on |f| <= 1/2), then
    // vscalefps multiplies by 2^n. Below -126 (outside the normal range, -inf
    // included) the result is exactly 0, as in the AVX2 kernel: those lanes are
    // masked off the vscalefps, because a result that underflows to a subnormal
    // or 0 costs a microcode assist on Intel cores (measured: a sparse-mask block,
    // mostly -inf, ran ~3x slower than a dense one before). NaN stays NaN (vmaxps
    // returns its second operand when either is NaN; NLT_UQ is true for NaN), so
    // a NaN input reaches the output as it does in the reference.
    static V exp2(V x) {
        x = _mm512_max_ps(_mm512_set1_ps(-160.0f), x);
        const V n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const V f = _mm512_sub_ps(x, n);
        V p = _mm512_set1_ps(1.5403530393381608e-4f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618129107628477e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550410866482158e-2f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2402265069591007f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931471805599453f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
        const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
        return _mm512_maskz_scalef_ps(normal, p, n);
    }
};

}  // namespace
}  // namespace attn::flash_detail
