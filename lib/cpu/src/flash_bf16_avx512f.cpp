// lib/cpu/src/flash_bf16_avx512f.cpp: the bf16 flash kernel on AVX-512 CPUs without
// the bf16 dot product (AVX-512F, as Skylake to Ice Lake Xeons and Zen 4 before its
// BF16 was enabled). The operands are those of the vdpbf16ps kernel (flash_bf16.cpp):
// Q, K, V and P stored as bf16 pairs, each product and sum in float32; a bf16 widens
// to float32 exactly by a 16-bit shift (the even one) or a mask (the odd one), so a
// pair's dot product is two float32 FMAs. P is rounded to nearest even as
// vcvtne2ps2bf16 rounds. Same tiling as the float32 kernel (flash_avx512.cpp).
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
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx512_traits.hpp"

namespace attn::flash_detail {
namespace {

struct Avx512Pairs : Avx512 {
    using VP = __m512i;  // 16 lanes of two bf16: the even one in the low half, the odd one in the high half
    static VP loadp(const uint32_t* p) { return _mm512_loadu_si512(p); }
    static VP set1p(uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
    static V even(VP a) { return _mm512_castsi512_ps(_mm512_slli_epi32(a, 16)); }
    static V odd(VP a) { return _mm512_castsi512_ps(_mm512_and_si512(a, _mm512_set1_epi32(static_cast<int>(0xffff0000u)))); }
    // acc + a.even * b.even + a.odd * b.odd
    static V dp(V acc, VP a, VP b) { return _mm512_fmadd_ps(odd(a), odd(b), _mm512_fmadd_ps(even(a), even(b), acc)); }
    // the float's bits rounded to the nearest bf16 (ties to even), in the high half
    static __m512i round(V x) {
        const __m512i u = _mm512_castps_si512(x);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        return _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    }
    static void pack_pairs(uint32_t* dst, V even_row, V odd_row) {
        const __m512i lo = _mm512_srli_epi32(round(even_row), 16);
        const __m512i hi = _mm512_and_si512(round(odd_row), _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
        _mm512_storeu_si512(dst, _mm512_or_si512(lo, hi));
    }
};

// Register tiles of 4 rows (the float32 kernel's 6 would spill: each pair operand
// is two registers once widened).
using KP = FlashF32<Avx512Pairs, 4, 4, 4, 4, 128, true>;
using KPL = FlashF32<Avx512Pairs, 16, 4, 4, 4, 128, true>;
const Kernel kPairsLong{"avx512-long", KPL::BQ, &KPL::workspace_floats, &KPL::run_item};
const Kernel kPairs{"avx512", KP::BQ, &KP::workspace_floats, &KP::run_item, &kPairsLong};

}  // namespace

const Kernel* avx512_pairs_kernel() { return &kPairs; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx512_pairs_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
