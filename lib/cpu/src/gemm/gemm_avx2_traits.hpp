// lib/cpu/src/gemm/gemm_avx2_traits.hpp: private. The AVX2 + FMA traits of the GEMM kernels
// (gemm_kernel.hpp): the flash kernels' (flash_avx2_traits.hpp: load, store, set1, fmadd)
// plus lane masks and a prefetch. Include only inside an AVX2 target region, after
// flash_kernel.hpp, flash_avx2_traits.hpp and gemm_kernel.hpp (F32Strip).
#pragma once

namespace attn::gemm {
namespace {

struct Avx2 : F32Strip<flash_detail::Avx2> {  // F32Strip: the strip operands (gemm_kernel.hpp)
    using M = __m256i;
    static M mask(int n) {  // the first n lanes (n <= 0: none, n >= 8: all)
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V load_m(const float* p, M m) { return _mm256_maskload_ps(p, m); }
    static void store_m(float* p, V x, M m) { _mm256_maskstore_ps(p, m, x); }
    static void prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace attn::gemm
