// lib/cpu/src/flash_avx2.cpp: the float32 flash kernel for AVX2 + FMA (8 lanes),
// for x86-64 CPUs without AVX-512. Compiled through a target pragma, chosen at
// run time by flash.cpp; standard headers come before the pragma (see flash_avx512.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "flash_args.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx2_traits.hpp"

namespace attn::flash_detail {
namespace {

// Block sizes: 16 ymm registers. NV = 4 (32 queries), RS = RP = 2: 8 accumulators
// + 4 loaded vectors + 1 broadcast = 13 registers, no spills. BK = 64 as for AVX-512;
// with 32 queries the per-block working set is 8 + 16 + 8 KiB (Dk = 64), L1-sized.
using K256 = FlashF32<Avx2, 4, 4, 2, 2, 64>;
const Kernel kAvx2{"avx2", K256::BQ, &K256::workspace_floats, &K256::run_item};

}  // namespace

const Kernel* avx2_kernel() { return &kAvx2; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx2_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
