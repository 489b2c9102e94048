// lib/cpu/src/flash/flash_generic.cpp: the float32 flash kernel in plain C++, for any CPU, and
// its bf16 path (the same kernel on operands rounded to bf16 values, as on AVX2).
// Its "vector" is 8 floats of the GCC/Clang vector extension, which the
// compiler lowers to the target's registers (SSE2 on a portable x86-64 build).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "flash_kernel.hpp"
#include "flash_generic_traits.hpp"

namespace attn::flash_detail {
namespace {

// Block sizes: 32 queries (4 x 8), tiles of 2 rows: 8 accumulator vectors = 16
// SSE2 registers' worth (some spill on SSE2; wider targets hold them); BK = 64
// keys as in the vector kernels.
using KGen = FlashF32<Generic, 4, 4, 2, 2, 64>;
const Kernel kGeneric{"generic", KGen::BQ, &KGen::workspace_floats, &KGen::run_item};

struct GenericRound : Generic {
    typedef uint32_t U __attribute__((vector_size(sizeof(V))));
    // to the nearest bf16 value, ties to even (as to_bf16), on the float's bits (a vector
    // cast between vectors of one size keeps the bits)
    static V round_bf16(V x) {
        const U u = (U)x;
        return (V)((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
    }
};
using KGenRound = FlashF32<GenericRound, 4, 4, 2, 2, 64, false, true>;
const Kernel kGenericRound{"generic", KGenRound::BQ, &KGenRound::workspace_floats, &KGenRound::run_item};

}  // namespace

const Kernel* generic_kernel() { return &kGeneric; }
const Kernel* generic_rounded_kernel() { return &kGenericRound; }

}  // namespace attn::flash_detail
