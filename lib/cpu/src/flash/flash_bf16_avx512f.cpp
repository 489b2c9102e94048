// lib/cpu/src/flash/flash_bf16_avx512f.cpp: the bf16 flash kernel on AVX-512 CPUs without
// the bf16 dot product (AVX-512F, as Skylake to Ice Lake Xeons and Zen 4 before its
// BF16 was enabled): the float32 kernel (flash_avx512.cpp, its tiling) on Q, K, V and P
// rounded to bf16 values (FlashF32's ROUND; K and V rounded once per call by flash.cpp,
// P to nearest even as vcvtne2ps2bf16 rounds). A product of two bf16 values is exact in
// float32, so the sums are those a bf16 dot product with float32 accumulation adds.
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

// The float32 AVX-512 kernel and tiles (flash_avx512.cpp) on operands rounded to bf16
// values, rather than the pairs widened by two shifts per use (on the FMA ports, 4-row tiles so
// as not to spill): the float32 kernel's inner loop unchanged.
struct Avx512Round : Avx512 {
    // to the nearest bf16 value, ties to even (as to_bf16), on the float's bits
    static V round_bf16(V x) {
        const __m512i u = _mm512_castps_si512(x);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
        return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    }
};

using KR = FlashF32<Avx512Round, 4, 4, 6, 6, 128, false, true>;
using KRL = FlashF32<Avx512Round, 16, 4, 6, 6, 128, false, true>;
const Kernel kRoundLong{"avx512-long", KRL::BQ, &KRL::workspace_floats, &Ftz<&KRL::run_item>::call};
const Kernel kRound{"avx512", KR::BQ, &KR::workspace_floats, &Ftz<&KR::run_item>::call, &kRoundLong};

}  // namespace

const Kernel* avx512_rounded_kernel() { return &kRound; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx512_rounded_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
