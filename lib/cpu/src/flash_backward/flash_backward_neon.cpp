// lib/cpu/src/flash_backward/flash_backward_neon.cpp: the float32 flash backward for AArch64 NEON
// (4 lanes). Chosen at run time by flash_backward.cpp on aarch64 unless
// ATTN_ISA=generic; elsewhere it compiles to a null entry.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attn/core/rng.hpp"
#include "flash/flash_args.hpp"
#include "flash_backward_args.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_neon_traits.hpp"
#include "flash_backward_kernel.hpp"

namespace attn::flash_detail {
namespace {

// The AVX2 backward's blocks in 4-lane vectors: BK = 32 keys = NK 8 vectors, passes 1-4
// in tiles of R = 2 rows x 8 vectors = 16 accumulators + 8 loaded + 1 broadcast (of 32
// registers); passes 5-7 in tiles of 2 rows x NC = 4 vectors (the template's most: 8
// FMAs per 4 loads + 2 broadcasts, AVX2's ratio); BQ = 64 queries.
using BNeon = FlashBwdF32<Neon, 8, 64, 2, 4>;
const BwdKernel kBwdNeon{"neon", BNeon::BK, 64, &BNeon::workspace_floats, &BNeon::run_item, &BNeon::refine_item};

}  // namespace

const BwdKernel* bwd_neon_kernel() { return &kBwdNeon; }

}  // namespace attn::flash_detail

#else
namespace attn::flash_detail {
const BwdKernel* bwd_neon_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
