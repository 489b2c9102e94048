// lib/cpu/src/gemm_neon_traits.hpp: private. The NEON (AArch64 Advanced SIMD) traits of the
// GEMM kernels (gemm_kernel.hpp): the flash kernels' (flash_neon_traits.hpp: one float32x4_t
// per vector, load, store, set1, fmadd = vfmaq_f32) plus lane masks and a prefetch. Include
// only on __aarch64__, after <arm_neon.h>, flash_kernel.hpp, flash_neon_traits.hpp and
// gemm_kernel.hpp (F32Strip).
//
// NEON has no masked load or store: a mask is the lane count, and a partial vector goes
// through a 4-float buffer (only at a block's right edge, once per tile and row of B, so the
// full-vector loop is untouched).
#pragma once

#include <cstring>

namespace attn::gemm {
namespace {

struct Neon : F32Strip<flash_detail::Neon> {  // F32Strip: the strip operands (gemm_kernel.hpp)
    using M = int;                                                      // the first M lanes
    static M mask(int n) { return n <= 0 ? 0 : n >= W ? W : n; }        // any int n: clamped to [0, 4]
    static V load_m(const float* p, M m) {                              // zeros past the first m lanes
        if (m == W) return load(p);
        float t[W] = {0.0f, 0.0f, 0.0f, 0.0f};
        std::memcpy(t, p, static_cast<size_t>(m) * sizeof(float));
        return load(t);
    }
    static void store_m(float* p, V x, M m) {
        if (m == W) return store(p, x);
        float t[W];
        store(t, x);
        std::memcpy(p, t, static_cast<size_t>(m) * sizeof(float));
    }
    static void prefetch(const float* p) { __builtin_prefetch(p, 0, 3); }
};

}  // namespace
}  // namespace attn::gemm
