// lib/cpu/src/gemm/gemm_bf16.cpp: the strip GEMM (gemm_kernel.hpp) on bfloat16 pairs (see
// attn/cpu/gemm.hpp), for AVX-512 BF16's vdpbf16ps: each float32 lane adds the products
// of a PAIR of bf16 numbers, x(i,2p) W(2p,j) + x(i,2p+1) W(2p+1,j), so one instruction
// does the work of two float32 FMAs. Compiled through a target pragma (GCC 12 or later,
// also in the portable build), called only where the CPU has avx512_bf16. Standard
// headers come before the pragma, so none of their inline code is compiled for it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/gemm.hpp"
#include "flash/flash_args.hpp"
#include "gemm_variants.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx512_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_avx512_traits.hpp"

namespace attn::gemm {
namespace {

// A pair of bf16 per 32-bit lane: each madd adds two products, x(i,2p) W(2p,j) + x(i,2p+1) W(2p+1,j).
struct Bf16Pairs : Avx512 {
    using E = uint32_t;
    static __m512bh load_w(const uint32_t* w) { return (__m512bh)_mm512_loadu_si512(w); }
    static __m512bh bcast(uint32_t x) { return (__m512bh)_mm512_set1_epi32(static_cast<int>(x)); }
    static __m512 madd(__m512 acc, __m512bh a, __m512bh w) { return _mm512_dpbf16_ps(acc, a, w); }
};

}  // namespace

bool bf16_dot_available() { return attn::cpu_has_avx512_bf16(); }

void rows_to_bf16(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp) {
    // each row becomes kp pairs (2 kp bf16 values, zeros past n_in), rounded to nearest
    // even by vcvtneps2bf16
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * n_in;
        uint16_t* d = dst + r * 2 * kp;
        int64_t k = 0;
        for (; k + 16 <= n_in; k += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k),
                                (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + k)));
        for (; k < 2 * kp; k += 16) {  // the last values, then zeros up to 2 kp
            const __m256i h =
                (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(Avx512::mask(static_cast<int>(n_in - k)), src + k));
            _mm256_mask_storeu_epi16(d + k, Avx512::mask(static_cast<int>(2 * kp - k)), h);
        }
    }
}

// 12 rows x 2 vectors (the whole strip), as the float32 AVX-512 kernel.
void strips_bf16(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                 int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    strips_run<Bf16Pairs, 12, 2>(out, xp, w, b, kp, n_out, r0, r1, c0, c1);
}

}  // namespace attn::gemm
#pragma GCC pop_options

#else
namespace attn::gemm {
bool bf16_dot_available() { return false; }
void rows_to_bf16(uint16_t*, const float*, int64_t, int64_t, int64_t) {}
void strips_bf16(float*, const uint32_t*, const uint32_t*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                 int64_t) {}
}  // namespace attn::gemm
#endif
