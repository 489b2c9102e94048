// lib/cpu/src/flash_backward/flash_backward_avx512.cpp: the float32 flash backward for AVX-512
// (16 lanes). Compiled through a target pragma, chosen at run time by
// flash_backward.cpp; standard headers come before the pragma (see flash_avx512.cpp).
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
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx512_traits.hpp"
#include "flash_backward_kernel.hpp"

namespace attn::flash_detail {
namespace {

// Block sizes (Zen 4: 32 zmm registers, 32 KiB L1d, 1 MiB L2 per core):
//  BK = 64 keys = 4 zmm, so passes 1-4 work on 4-vector rows; R = 6: the register
//  tiles are 6 x 4 = 24 accumulators + 4 loaded vectors + 1 broadcast of 32.
//  BQ = 64 queries: the per-tile blocks P, Pd, dS (16 KiB each) and the key block's
//  KT, VT, Kp, dK, dV (16 KiB each at D = 64) stay in L2 while Q̂s, dO and dQ rows
//  stream past once per key block.
using B512 = FlashBwdF32<Avx512, 4, 64, 6, 4>;
const BwdKernel kBwdAvx512{"avx512", B512::BK, 64, &B512::workspace_floats, &Ftz<&B512::run_item>::call,
                          &Ftz<&B512::refine_item>::call};

}  // namespace

const BwdKernel* bwd_avx512_kernel() { return &kBwdAvx512; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const BwdKernel* bwd_avx512_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
