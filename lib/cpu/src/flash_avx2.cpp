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

// Block sizes: 16 ymm registers. NV = 12 (96 queries), swept by tiles of NT = 3 vectors;
// RS = RP = 4 rows: 12 accumulators + 3 loaded vectors + 1 broadcast = all 16 registers,
// 7 loads per 12 FMAs, and 64 keys and 64 dimensions are whole numbers of 4-row tiles (no
// remainder tile). Twelve independent accumulators cover the FMA latency (4 cycles x 2
// units = 8 in flight); the 2 x 4 tile of the first version had exactly 8 and ran at ~64%
// of the AVX2 FMA peak. Since the softmax pass fetches each key block's V rows
// (flash_kernel.hpp), on a Sapphire Rapids Xeon forced to AVX2 (T 4096, Dk 64, 1 thread,
// per CPU-second, five alternated runs): 6 x 2 tiles over 64 queries 81.4% of the FMA loop,
// these 83.9% (causal 79.9% and 79.4%: level; T 2048 and 2 threads 1.5-2.5% ahead). Key
// blocks of 32 or 96 keys measured lower than 64. A 96-query block of a sequence that is
// not a multiple of 96 leaves lanes idle in its last block (0.8% of the work at T 4096).
using K256 = FlashF32<Avx2, 12, 3, 4, 4, 64>;
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
