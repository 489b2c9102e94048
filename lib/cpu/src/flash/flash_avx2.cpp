// lib/cpu/src/flash/flash_avx2.cpp: the float32 flash kernel for AVX2 + FMA (8 lanes),
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

// Block sizes: 16 ymm registers. NV = 8 (64 queries), swept by tiles of NT = 2 vectors;
// RS = RP = 6 rows: 12 accumulators + 2 loaded vectors + 1 broadcast = 15 registers, no
// spills, 8 loads per 12 FMAs. Twelve independent accumulators cover the FMA latency
// (4 cycles x 2 units = 8 in flight); the 2 x 4 tile this replaced had exactly 8 and ran at
// ~64% of the AVX2 FMA peak against ~74% now (Sapphire Rapids forced to AVX2, T 4096, Dk 64,
// 1 thread, per CPU-second; 4 x 3 tiles over 96 queries measured the same as 6 x 2). BK = 64.
using K256 = FlashF32<Avx2, 8, 2, 6, 6, 64>;
const Kernel kAvx2{"avx2", K256::BQ, &K256::workspace_floats, &Ftz<&K256::run_item>::call};

}  // namespace

const Kernel* avx2_kernel() { return &kAvx2; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx2_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
