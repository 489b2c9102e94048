// lib/cpu/src/flash_generic.cpp: the float32 flash kernel in plain C++, for any CPU.
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

}  // namespace

const Kernel* generic_kernel() { return &kGeneric; }

}  // namespace attn::flash_detail
