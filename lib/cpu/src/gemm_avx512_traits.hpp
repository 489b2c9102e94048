// lib/cpu/src/gemm_avx512_traits.hpp: private. The AVX-512 traits of the GEMM kernels
// (gemm_kernel.hpp): the flash kernels' (flash_avx512_traits.hpp: load, store, set1, fmadd)
// plus lane masks and a prefetch. Include only inside an AVX-512 target region, after
// flash_kernel.hpp and flash_avx512_traits.hpp.
#pragma once

namespace attn::gemm {
namespace {

struct Avx512 : flash_detail::Avx512 {
    using M = __mmask16;
    static M mask(int n) { return n >= 16 ? M(0xFFFF) : n <= 0 ? M(0) : M((1u << n) - 1u); }  // the first n lanes
    static V load_m(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_m(float* p, V x, M m) { _mm512_mask_storeu_ps(p, m, x); }
    static void prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
    // the strip kernel's operands: float32
    using E = float;
    static V load_w(const float* p) { return load(p); }
    static V bcast(float x) { return set1(x); }
    static V madd(V acc, V a, V w) { return fmadd(a, w, acc); }
};

}  // namespace
}  // namespace attn::gemm
