// lib/cpu/src/flash_backward/flash_backward_avx2.cpp: the float32 flash backward for AVX2 + FMA
// (8 lanes), for x86-64 CPUs without AVX-512. Compiled through a target pragma,
// chosen at run time by flash_backward.cpp (see flash_avx512.cpp on the headers).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "flash/flash_args.hpp"
#include "flash_backward_args.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx2_traits.hpp"
#include "flash_backward_kernel.hpp"

namespace attn::flash_detail {
namespace {

// 16 ymm registers: BK = 32 keys = 4 ymm, tiles of R = 6 rows x NC = 2 vectors = 12
// accumulators + 2 loaded vectors + 1 broadcast, no spills; BQ = 64 queries. Twelve
// independent accumulators cover the FMA latency; the 2 x 4 tile this replaced (8) ran at
// ~70% of the AVX2 FMA peak against ~76% now (T 2048, Dk 64, 1 thread, per CPU-second).
using B256 = FlashBwdF32<Avx2, 4, 64, 6, 2>;
const BwdKernel kBwdAvx2{"avx2", B256::BK, 64, &B256::workspace_floats, &Ftz<&B256::run_item>::call,
                        &Ftz<&B256::refine_item>::call};

}  // namespace

const BwdKernel* bwd_avx2_kernel() { return &kBwdAvx2; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const BwdKernel* bwd_avx2_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
