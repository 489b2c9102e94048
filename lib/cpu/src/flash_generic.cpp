// lib/cpu/src/flash_generic.cpp: the float32 flash kernel in plain C++, for any CPU.
// Its "vector" is 8 floats of the GCC/Clang vector extension, which the
// compiler lowers to the target's registers (SSE2 on a portable x86-64 build).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "flash_kernel.hpp"

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
    static V max(V a, V b) { return a > b ? a : b; }
    static V finite_or_zero(V a) { return a == kNegInf ? V{} : a; }
    static V exp2(V a) {
        V r;
        for (int i = 0; i < W; ++i) r[i] = std::exp2(a[i]);
        return r;
    }
};

// Block sizes: 32 queries (4 x 8), tiles of 2 rows: 8 accumulator vectors = 16
// SSE2 registers' worth (some spill on SSE2; wider targets hold them); BK = 64
// keys as in the vector kernels.
using KGen = FlashF32<Generic, 4, 4, 2, 2, 64>;
const Kernel kGeneric{"generic", KGen::BQ, &KGen::workspace_floats, &KGen::run_item};

}  // namespace

const Kernel* generic_kernel() { return &kGeneric; }

}  // namespace attn::flash_detail
