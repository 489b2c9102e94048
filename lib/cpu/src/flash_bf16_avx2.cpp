// lib/cpu/src/flash_bf16_avx2.cpp: the bf16 flash kernel on AVX2 + FMA CPUs (no bf16
// instruction at all): bf16 storage of Q, K, V and P, float32 arithmetic, the same
// numbers as the AVX-512 kernels (see flash_bf16_avx512f.cpp for the widening and
// the rounding). Same tiling as the float32 AVX2 kernel (flash_avx2.cpp).
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

struct Avx2Pairs : Avx2 {
    using VP = __m256i;  // 8 lanes of two bf16: even low, odd high
    static VP loadp(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static VP set1p(uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
    static V even(VP a) { return _mm256_castsi256_ps(_mm256_slli_epi32(a, 16)); }
    static V odd(VP a) { return _mm256_castsi256_ps(_mm256_and_si256(a, _mm256_set1_epi32(static_cast<int>(0xffff0000u)))); }
    static V dp(V acc, VP a, VP b) { return _mm256_fmadd_ps(odd(a), odd(b), _mm256_fmadd_ps(even(a), even(b), acc)); }
    static __m256i round(V x) {
        const __m256i u = _mm256_castps_si256(x);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        return _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    }
    static void pack_pairs(uint32_t* dst, V even_row, V odd_row) {
        const __m256i lo = _mm256_srli_epi32(round(even_row), 16);
        const __m256i hi = _mm256_and_si256(round(odd_row), _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_or_si256(lo, hi));
    }
};

using KP = FlashF32<Avx2Pairs, 4, 4, 2, 2, 64, true>;
const Kernel kPairs{"avx2", KP::BQ, &KP::workspace_floats, &KP::run_item};

}  // namespace

const Kernel* avx2_pairs_kernel() { return &kPairs; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx2_pairs_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
