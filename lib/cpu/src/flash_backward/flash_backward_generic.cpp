// lib/cpu/src/flash_backward/flash_backward_generic.cpp: the float32 flash backward in plain C++
// (8-float GCC/Clang vectors, lowered to whatever the target has), for any CPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attn/core/rng.hpp"
#include "flash/flash_kernel.hpp"
#include "flash/flash_generic_traits.hpp"
#include "flash_backward_kernel.hpp"

namespace attn::flash_detail {
namespace {

// As the AVX2 kernel: 32-key blocks (4 vectors of 8), tiles of 2 rows, 64-query blocks.
using BGen = FlashBwdF32<Generic, 4, 64, 2, 4>;
const BwdKernel kBwdGeneric{"generic", BGen::BK, 64, &BGen::workspace_floats, &BGen::run_item, &BGen::refine_item};

}  // namespace

const BwdKernel* bwd_generic_kernel() { return &kBwdGeneric; }

}  // namespace attn::flash_detail
