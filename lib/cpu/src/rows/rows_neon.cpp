// The NEON row kernels of the fast ops (attn/cpu/rows.hpp) for AArch64: rows_kernel.hpp over 16
// lanes held in four float32x4_t registers, and 4 x 4 block transposes. The lanes, the reduction
// tree, the exp (2^n put in the exponent bits) and the GELU's reciprocal (a true division) are
// those of the AVX2 kernels (rows_avx2.cpp), operation for operation, so each row gives the AVX2
// kernels' bits. NEON is part of every AArch64 CPU: no target pragma; elsewhere the table is null.
// Chosen at run time on aarch64 unless ATTN_ISA=generic.
#include "attn/cpu/rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__aarch64__)
#include <arm_neon.h>

#include "rows_kernel.hpp"

namespace attn::rows {
namespace {

// exp as rows_avx2.cpp's exp8: the input clamped to [-87, 88], Cody-Waite by ln 2, Cephes'
// polynomial, 2^n in the exponent bits (n in [-126, 127] for the clamped x: a normal float).
// vfmsq_f32(c, a, b) = c - a b with one rounding, as _mm256_fnmadd_ps(a, b, c). vmaxq_f32 and
// vminq_f32 return NaN when either input is NaN, so NaN stays NaN.
float32x4_t exp4(float32x4_t x) {
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));  // nearest, ties to even
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);  // n is whole: exact
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

// 16 lanes as four q registers (rows_kernel.hpp): lanes 4j .. 4j + 3 in v[j]
struct NeonLanes {
    struct V {
        float32x4_t v[4];
    };
    template <class F>
    static V map(F f) {
        return {{f(0), f(1), f(2), f(3)}};
    }
    static V zero() { return set1(0.0f); }
    static V set1(float x) {
        const float32x4_t s = vdupq_n_f32(x);
        return {{s, s, s, s}};
    }
    static V load(const float* p) { return {{vld1q_f32(p), vld1q_f32(p + 4), vld1q_f32(p + 8), vld1q_f32(p + 12)}}; }
    static void store(float* p, V a) {
        for (int j = 0; j < 4; ++j) vst1q_f32(p + 4 * j, a.v[j]);
    }
    // the first n lanes (n clamped to [0, 16]) through a buffer; zeros past them
    static V load_n(const float* p, int64_t n) {
        float t[16] = {};
        std::memcpy(t, p, static_cast<size_t>(std::clamp<int64_t>(n, 0, 16)) * sizeof(float));
        return load(t);
    }
    static void store_n(float* p, V a, int64_t n) {
        float t[16];
        store(t, a);
        std::memcpy(p, t, static_cast<size_t>(std::clamp<int64_t>(n, 0, 16)) * sizeof(float));
    }
    static V add(V a, V b) { return map([&](int j) { return vaddq_f32(a.v[j], b.v[j]); }); }
    static V sub(V a, V b) { return map([&](int j) { return vsubq_f32(a.v[j], b.v[j]); }); }
    static V mul(V a, V b) { return map([&](int j) { return vmulq_f32(a.v[j], b.v[j]); }); }
    // NaN in either operand gives NaN (vmaxps passes its second operand); the kernels take the
    // max of finite scores and the -inf fill only
    static V max(V a, V b) { return map([&](int j) { return vmaxq_f32(a.v[j], b.v[j]); }); }
    static V fmadd(V a, V b, V c) { return map([&](int j) { return vfmaq_f32(c.v[j], a.v[j], b.v[j]); }); }
    static V fnmadd(V a, V b, V c) { return map([&](int j) { return vfmsq_f32(c.v[j], a.v[j], b.v[j]); }); }
    static V keep_n(V a, int64_t n, float f) {
        const int32x4_t lane = {0, 1, 2, 3};
        const float32x4_t fill = vdupq_n_f32(f);
        return map([&](int j) {
            const int k = static_cast<int>(std::clamp<int64_t>(n - 4 * j, 0, 4));
            return vbslq_f32(vcltq_s32(lane, vdupq_n_s32(k)), a.v[j], fill);
        });
    }
    // the tree of _mm512_reduce_add_ps / rows_avx2.cpp: (l, l+8), (l, l+4), (l, l+2), (l, l+1)
    static float reduce_add(V a) {
        const float32x4_t h4 = vaddq_f32(vaddq_f32(a.v[0], a.v[2]), vaddq_f32(a.v[1], a.v[3]));
        const float32x4_t h2 = vaddq_f32(h4, vextq_f32(h4, h4, 2));
        return vgetq_lane_f32(h2, 0) + vgetq_lane_f32(h2, 1);
    }
    static float reduce_max(V a) {
        const float32x4_t h4 = vmaxq_f32(vmaxq_f32(a.v[0], a.v[2]), vmaxq_f32(a.v[1], a.v[3]));
        const float32x4_t h2 = vmaxq_f32(h4, vextq_f32(h4, h4, 2));
        return std::max(vgetq_lane_f32(h2, 0), vgetq_lane_f32(h2, 1));
    }
    static V exp(V x) { return map([&](int j) { return exp4(x.v[j]); }); }
    // a true division, as the AVX2 kernels (rows_avx2.cpp says why not an estimate and Newton steps)
    static V recip(V d) { return map([&](int j) { return vdivq_f32(vdupq_n_f32(1.0f), d.v[j]); }); }
};

// dst[c * ldd + r] (=, or += when ADD) src[r * lds + c]: 4 x 4 blocks through registers (two
// rounds of zips), the edges one float at a time
template <bool ADD>
void transpose_blocks(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds) {
    const int64_t r4 = rows / 4 * 4, c4 = cols / 4 * 4;
    for (int64_t r = 0; r < r4; r += 4) {
        const float* s = src + r * lds;
        __builtin_prefetch(s + 8 * lds);
        for (int64_t c = 0; c < c4; c += 4) {
            const float32x4_t a0 = vld1q_f32(s + c), a1 = vld1q_f32(s + lds + c), a2 = vld1q_f32(s + 2 * lds + c),
                              a3 = vld1q_f32(s + 3 * lds + c);
            const float32x4_t t0 = vzip1q_f32(a0, a2), t1 = vzip2q_f32(a0, a2), t2 = vzip1q_f32(a1, a3),
                              t3 = vzip2q_f32(a1, a3);
            float32x4_t col[4] = {vzip1q_f32(t0, t2), vzip2q_f32(t0, t2), vzip1q_f32(t1, t3), vzip2q_f32(t1, t3)};
            for (int j = 0; j < 4; ++j) {
                float* d = dst + (c + j) * ldd + r;
                if constexpr (ADD) col[j] = vaddq_f32(vld1q_f32(d), col[j]);
                vst1q_f32(d, col[j]);
            }
        }
        for (int64_t c = c4; c < cols; ++c)
            for (int64_t i = r; i < r + 4; ++i) {
                float& d = dst[c * ldd + i];
                d = ADD ? d + src[i * lds + c] : src[i * lds + c];
            }
    }
    for (int64_t i = r4; i < rows; ++i)
        for (int64_t c = 0; c < cols; ++c) {
            float& d = dst[c * ldd + i];
            d = ADD ? d + src[i * lds + c] : src[i * lds + c];
        }
}

void transpose_neon(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds, bool add) {
    if (add) transpose_blocks<true>(dst, ldd, src, rows, cols, lds);
    else transpose_blocks<false>(dst, ldd, src, rows, cols, lds);
}

}  // namespace

const RowKernels* rows_neon_kernels() { return row_kernel_table<NeonLanes, &transpose_neon>(); }

}  // namespace attn::rows

#else
namespace attn::rows {
const RowKernels* rows_neon_kernels() { return nullptr; }
}  // namespace attn::rows
#endif
