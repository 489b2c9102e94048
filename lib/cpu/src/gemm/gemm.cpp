// lib/cpu/src/gemm/gemm.cpp: which float32 GEMM kernel runs (attn/cpu/gemm.hpp), from the one
// feature probe (features.hpp, under ATTN_ISA), and the strip packing.
#include "attn/cpu/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gemm_variants.hpp"

namespace attn::gemm {

bool available(Isa isa) {
    switch (isa) {
        case Isa::avx512: return cpu_has_avx512() && detail::strided_avx512() != nullptr;
        case Isa::avx2: return cpu_has_avx2() && detail::strided_avx2() != nullptr;
        case Isa::neon: return cpu_has_neon() && detail::strided_neon() != nullptr;
        case Isa::generic: return true;
        case Isa::amx: break;
    }
    return false;
}

Isa best() {
    if (available(Isa::avx512)) return Isa::avx512;
    if (available(Isa::avx2)) return Isa::avx2;
    if (available(Isa::neon)) return Isa::neon;
    return Isa::generic;
}

namespace {
// A family's kernels (the generic ones for Isa::generic; amx has none of its own).
struct Kernels {
    StridedFn strided;
    StripsFn strips;
    StripsPairsFn widened;
};
Kernels kernels_of(Isa isa) {
    switch (isa) {
        case Isa::avx512: return {detail::strided_avx512(), detail::strips_avx512(), detail::strips_widened_avx512()};
        case Isa::avx2: return {detail::strided_avx2(), detail::strips_avx2(), detail::strips_widened_avx2()};
        case Isa::neon: return {detail::strided_neon(), detail::strips_neon(), detail::strips_widened_neon()};
        case Isa::generic:
        case Isa::amx: break;
    }
    return {detail::strided_generic(), detail::strips_generic(), detail::strips_widened_generic()};
}
}  // namespace

StridedFn strided(Isa isa) { return available(isa) ? kernels_of(isa).strided : nullptr; }
StripsFn strips(Isa isa) { return available(isa) ? kernels_of(isa).strips : nullptr; }
StripsPairsFn strips_widened(Isa isa) { return available(isa) ? kernels_of(isa).widened : nullptr; }

void rows_to_bf16_widened(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp) {
    if (available(Isa::avx512)) return detail::rows_to_bf16_avx512(dst, x, rows, n_in, kp);
    // nearest even by an integer add on the bits, NaN kept quiet (bit 6 of the high half), as
    // vcvtneps2bf16 and the AVX-512 loop round; zeros past n_in up to 2 kp
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * n_in;
        uint16_t* d = dst + r * 2 * kp;
        for (int64_t k = 0; k < 2 * kp; ++k) {
            if (k >= n_in) {
                d[k] = 0;
                continue;
            }
            uint32_t u;
            std::memcpy(&u, src + k, sizeof u);
            d[k] = std::isnan(src[k]) ? static_cast<uint16_t>((u >> 16) | 0x40u)
                                      : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
}

int64_t strips_size(int64_t n_in, int64_t n_out) { return (n_out + kStrip - 1) / kStrip * n_in * kStrip; }

void pack_strips(float* dst, const float* Wt, int64_t n_in, int64_t n_out) {
    std::fill(dst, dst + strips_size(n_in, n_out), 0.0f);
    for (int64_t k = 0; k < n_in; ++k)
        for (int64_t j = 0; j < n_out; ++j)
            dst[((j / kStrip) * n_in + k) * kStrip + j % kStrip] = Wt[k * n_out + j];
}

}  // namespace attn::gemm

