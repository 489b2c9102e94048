// lib/cpu/src/gemm/gemm_avx512_traits.hpp: private. The AVX-512 traits of the GEMM kernels
// (gemm_kernel.hpp): the flash kernels' (flash_avx512_traits.hpp: load, store, set1, fmadd)
// plus lane masks and a prefetch. Include only inside an AVX-512 target region, after
// flash_kernel.hpp, flash_avx512_traits.hpp and gemm_kernel.hpp (F32Strip).
#pragma once

namespace attn::gemm {
namespace {

struct Avx512 : F32Strip<flash_detail::Avx512> {  // F32Strip: the strip operands (gemm_kernel.hpp)
    using M = __mmask16;
    static M mask(int n) { return n >= 16 ? M(0xFFFF) : n <= 0 ? M(0) : M((1u << n) - 1u); }  // the first n lanes
    static V load_m(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_m(float* p, V x, M m) { _mm512_mask_storeu_ps(p, m, x); }
    static void prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace attn::gemm
