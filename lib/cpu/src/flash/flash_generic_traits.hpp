// lib/cpu/src/flash/flash_generic_traits.hpp: private. The plain C++ "SIMD" traits of the
// flash kernels (see flash_kernel.hpp), shared by the forward (flash_generic.cpp)
// and the backward (flash_backward_generic.cpp). Include after flash_kernel.hpp.
#pragma once

#include <cmath>
#include <cstring>

namespace attn::flash_detail {
namespace {

struct Generic {
    // GCC/Clang vector extension: 8 floats, lowered to whatever the target has
    // (two SSE2 registers on baseline x86-64, NEON pairs on Arm, scalars elsewhere).
    typedef float V __attribute__((vector_size(32)));
    static constexpr int W = 8;
    static V zero() { return V{}; }
    static V load(const float* p) {
        V r;
        std::memcpy(&r, p, sizeof r);
        return r;
    }
    static void store(float* p, V a) { std::memcpy(p, &a, sizeof a); }
    static V set1(float s) { return V{s, s, s, s, s, s, s, s}; }
    static V fmadd(V a, V b, V c) { return a * b + c; }
    static V mul(V a, V b) { return a * b; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V div(V a, V b) { return a / b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V finite_or_zero(V a) { return a == kNegInf ? V{} : a; }
    static V exp2(V a) {
        V r;
        for (int i = 0; i < W; ++i) r[i] = std::exp2(a[i]);
        return r;
    }
};

}  // namespace
}  // namespace attn::flash_detail
