// lib/cpu/src/flash/flash_neon_traits.hpp: private. The NEON (AArch64 Advanced SIMD) traits
// of the flash kernels (see flash_kernel.hpp), shared by the forward (flash_neon.cpp)
// and the backward (flash_backward_neon.cpp). Include only on __aarch64__, after
// flash_kernel.hpp and <arm_neon.h>.
//
// One vector is one 128-bit register, W = 4 floats. A pair of registers (W = 8) would
// copy the AVX2 kernel's shape, but it only renames the tiles: AArch64 has 32 vector
// registers, so the kernels keep AVX2's 32-query blocks as NV = 8 single vectors and
// the tile rows as they are, and every V in the template's register counts is one
// real register (see the block sizes in flash_neon.cpp).
#pragma once

namespace attn::flash_detail {
namespace {

struct Neon {
    using V = float32x4_t;
    static constexpr int W = 4;
    static V zero() { return vdupq_n_f32(0.0f); }
    static V load(const float* p) { return vld1q_f32(p); }
    static void store(float* p, V x) { vst1q_f32(p, x); }
    static V set1(float x) { return vdupq_n_f32(x); }
    static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // a b + c, one rounding
    static V mul(V a, V b) { return vmulq_f32(a, b); }
    static V add(V a, V b) { return vaddq_f32(a, b); }
    static V sub(V a, V b) { return vsubq_f32(a, b); }
    static V div(V a, V b) { return vdivq_f32(a, b); }
    // fmax: NaN in either operand gives NaN (AVX's vmaxps passes its second operand)
    static V max(V a, V b) { return vmaxq_f32(a, b); }
    static V finite_or_zero(V x) {
        const uint32x4_t ninf = vceqq_f32(x, vdupq_n_f32(kNegInf));
        return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(x), ninf));
    }
    // 2^x for x <= 0 as in the AVX2 and AVX-512 kernels: the same polynomial on the
    // fraction, 2^n built in the exponent bits. Below -126 (outside the normal range)
    // the result is exactly 0, so masked (-inf) scores weigh exactly 0 as in the
    // reference; NaN stays NaN (fmax and frintn pass it through, fcvtzs makes n = 0,
    // so the product is NaN times 1).
    static V exp2(V x) {
        const uint32x4_t tiny = vcltq_f32(x, vdupq_n_f32(-126.0f));  // true for -inf, false for NaN
        x = vmaxq_f32(vdupq_n_f32(-126.0f), x);
        const V n = vrndnq_f32(x);  // to nearest, ties to even, as _MM_FROUND_TO_NEAREST_INT
        const V f = vsubq_f32(x, n);
        V p = vdupq_n_f32(1.5403530393381608e-4f);
        p = vfmaq_f32(vdupq_n_f32(1.3333558146428443e-3f), p, f);
        p = vfmaq_f32(vdupq_n_f32(9.618129107628477e-3f), p, f);
        p = vfmaq_f32(vdupq_n_f32(5.550410866482158e-2f), p, f);
        p = vfmaq_f32(vdupq_n_f32(0.2402265069591007f), p, f);
        p = vfmaq_f32(vdupq_n_f32(0.6931471805599453f), p, f);
        p = vfmaq_f32(vdupq_n_f32(1.0f), p, f);
        const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
        const uint32x4_t r = vreinterpretq_u32_f32(vmulq_f32(p, vreinterpretq_f32_s32(e)));
        return vreinterpretq_f32_u32(vbicq_u32(r, tiny));
    }
};

}  // namespace
}  // namespace attn::flash_detail
