// lib/cpu/src/gemm.cpp: which float32 GEMM kernel runs (attn/cpu/gemm.hpp), from the one
// feature probe (features.hpp, under ATTN_ISA), and the strip packing.
#include "attn/cpu/gemm.hpp"

#include <algorithm>

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

StridedFn strided(Isa isa) {
    if (!available(isa)) return nullptr;
    switch (isa) {
        case Isa::avx512: return detail::strided_avx512();
        case Isa::avx2: return detail::strided_avx2();
        case Isa::neon: return detail::strided_neon();
        case Isa::generic:
        case Isa::amx: break;
    }
    return detail::strided_generic();
}

StripsFn strips(Isa isa) {
    if (!available(isa)) return nullptr;
    switch (isa) {
        case Isa::avx512: return detail::strips_avx512();
        case Isa::avx2: return detail::strips_avx2();
        case Isa::neon: return detail::strips_neon();
        case Isa::generic:
        case Isa::amx: break;
    }
    return detail::strips_generic();
}

int64_t strips_size(int64_t n_in, int64_t n_out) { return (n_out + kStrip - 1) / kStrip * n_in * kStrip; }

void pack_strips(float* dst, const float* Wt, int64_t n_in, int64_t n_out) {
    std::fill(dst, dst + strips_size(n_in, n_out), 0.0f);
    for (int64_t k = 0; k < n_in; ++k)
        for (int64_t j = 0; j < n_out; ++j)
            dst[((j / kStrip) * n_in + k) * kStrip + j % kStrip] = Wt[k * n_out + j];
}

}  // namespace attn::gemm
