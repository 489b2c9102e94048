// lib/cpu/src/flash/flash_bf16_avx2.cpp: the bf16 flash kernel on AVX2 + FMA CPUs (no bf16
// instruction at all): the float32 AVX2 kernel (flash_avx2.cpp, its tiling) on operands
// rounded to bf16 values, as flash_bf16_avx512f.cpp does on AVX-512.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "flash_args.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx2_traits.hpp"

namespace attn::flash_detail {
namespace {

// The float32 AVX2 kernel and tiles (flash_avx2.cpp) on operands rounded to bf16 values.
// Rounded floats rather than the pairs of avx512_bf16_kernel's layout widened by two shifts
// per use (on the FMA ports): the float32 kernel's inner loop unchanged.
struct Avx2Round : Avx2 {
    // to the nearest bf16 value, ties to even (as to_bf16), on the float's bits
    static V round_bf16(V x) {
        const __m256i u = _mm256_castps_si256(x);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
        return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
    }
};

using KR = FlashF32<Avx2Round, 8, 2, 6, 6, 64, false, true>;
const Kernel kRound{"avx2", KR::BQ, &KR::workspace_floats, &Ftz<&KR::run_item>::call};

}  // namespace

const Kernel* avx2_rounded_kernel() { return &kRound; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx2_rounded_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
