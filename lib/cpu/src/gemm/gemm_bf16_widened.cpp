// lib/cpu/src/gemm/gemm_bf16_widened.cpp: the strip GEMM (gemm_kernel.hpp) on bf16 pairs (see
// attn/cpu/gemm.hpp) for AVX-512 CPUs without the bf16 dot product. The operands are the
// same bf16 pairs as gemm_bf16.cpp's; each pair's two products are two float32 FMAs on the
// pair widened by shifts (gemm_kernel.hpp's WidenedPairs, which the AVX2, NEON and generic
// families use too), so every product is exact and the sums are float32, as with vdpbf16ps.
// x is rounded to bf16 by integer adds (nearest even, NaN kept), as vcvtneps2bf16 rounds.
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

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx512_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_avx512_traits.hpp"

namespace attn::gemm {
namespace {

// 16 floats -> 16 bf16, rounded to nearest even (NaN stays NaN)
__m256i to_bf16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

}  // namespace

void detail::rows_to_bf16_avx512(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * n_in;
        uint16_t* d = dst + r * 2 * kp;
        int64_t k = 0;
        for (; k + 16 <= n_in; k += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k), to_bf16(_mm512_loadu_ps(src + k)));
        for (; k < 2 * kp; k += 16)  // the last values, then zeros up to 2 kp
            _mm256_mask_storeu_epi16(d + k, Avx512::mask(static_cast<int>(2 * kp - k)),
                                     to_bf16(_mm512_maskz_loadu_ps(Avx512::mask(static_cast<int>(n_in - k)), src + k)));
    }
}

namespace {
// 12 rows x 2 vectors (16 columns): 24 accumulators + 2 widened strip pairs (4 registers) + 1
// widened x pair (2) = 30 of the 32 zmm registers.
void strips_call(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                 int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    strips_run<WidenedPairs<Avx512>, 12, 2>(out, xp, w, b, kp, n_out, r0, r1, c0, c1);
}
}  // namespace

StripsPairsFn detail::strips_widened_avx512() { return &strips_call; }

}  // namespace attn::gemm
#pragma GCC pop_options

#else
namespace attn::gemm {
void detail::rows_to_bf16_avx512(uint16_t*, const float*, int64_t, int64_t, int64_t) {}
StripsPairsFn detail::strips_widened_avx512() { return nullptr; }
}  // namespace attn::gemm
#endif
