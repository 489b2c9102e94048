// lib/cpu/src/flash/flash_ftz.hpp: private. MXCSR's flush-to-zero for the call of one flash
// kernel (AVX2 and AVX-512 alike), so that their exp2 may produce results below the
// normal range without a microcode assist. Include inside an x86 target region, after
// <immintrin.h> (flash_avx2_traits.hpp and flash_avx512_traits.hpp do).
#pragma once

namespace attn::flash_detail {
namespace {

// MXCSR's flush-to-zero bit set for one call: a result below the normal range becomes 0
// instead of a subnormal (which Intel cores produce through a microcode assist, ~100+
// cycles). Only such results change, by less than 2^-126; inputs are read as they are.
// Per thread (MXCSR is), and the caller's setting comes back on return.
class FlushToZero {
public:
    FlushToZero() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | _MM_FLUSH_ZERO_ON); }
    ~FlushToZero() { _mm_setcsr(saved_); }
    FlushToZero(const FlushToZero&) = delete;
    FlushToZero& operator=(const FlushToZero&) = delete;

private:
    unsigned saved_;
};

// F (a kernel's entry point) called under FlushToZero: &Ftz<&K::run_item>::call.
template <auto F>
struct Ftz;
template <class R, class... A, R (*F)(A...)>
struct Ftz<F> {
    static R call(A... a) {
        const FlushToZero ftz;
        return F(a...);
    }
};

}  // namespace
}  // namespace attn::flash_detail
