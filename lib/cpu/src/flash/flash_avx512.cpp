// lib/cpu/src/flash/flash_avx512.cpp: the float32 flash kernel for AVX-512 (16 lanes).
// Compiled for AVX-512 through a target pragma even in the portable build, and
// chosen at run time only where the CPU has it (flash.cpp asks
// __builtin_cpu_supports). Standard headers are included before the pragma so
// none of their inline functions is compiled for AVX-512.
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
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx512_traits.hpp"

namespace attn::flash_detail {
namespace {

// Block sizes (Zen 4 here: 32 KiB L1d, 1 MiB L2 per core, 32 zmm registers):
//  NV = 4: a query block is 64 queries = 4 zmm; RS = RP = 6: the register tile is
//  6 x 4 = 24 accumulators + 4 loaded vectors + 1 broadcast = 29 of 32 registers,
//  and each step issues 24 FMAs per 4 loads + 6 broadcasts.
//  BK = 128 keys: OT (Dv x 64 floats) is loaded, rescaled and stored once per key
//  block, and the softmax bookkeeping runs once per block, so fewer, larger blocks
//  cost less; but the block's scores ST (BK x 64 floats = 32 KiB) and K rows
//  (32 KiB at Dk = 64) should stay in the 1 MiB L2 next to QT and OT (16 KiB
//  each), and a causal diagonal block wastes up to half of BK x 64 products.
//  Measured here (T=2048, Dk=64, 1 thread, GFLOP/s per CPU-second, the machine
//  shared): BK 32: 91, 64: 94.5, 128: 96.5, 256: 98; NV x R = 2 x 12: 95,
//  3 x 8: 96. The FMA loop peak per core is ~117.
//  Re-measured on a Sapphire Rapids class Xeon (48 KiB L1d, 2 MiB L2, T=4096, Dk=64,
//  1 thread, shared machine, load ~4.5): BK 64 and 128 alike, NT x R = 2 x 12 ~9%
//  slower than 4 x 6, 256-query blocks at T=4096 no faster; perf: the two tile
//  loops are ~85% of the time, the softmax ~8%.
//  Since the softmax pass fetches each key block's V rows (flash_kernel.hpp), 128-query
//  blocks (NV = 8, the 6 x 4 tiles sweeping each block twice) with BK = 64 keys: every
//  K and V row brought in serves twice the queries, and ST stays at 32 KiB. Same Xeon,
//  T 4096, 1 thread, 5 alternated runs of `attn bench --seq 4096 --impl flash`: 77.9%
//  -> 80.0% of the FMA loop (causal: 69.9% -> 73.0% on a busier machine); at T 1024,
//  2048 and at 2 threads within the runs' noise. Zen 4 (32 KiB L1d) is not re-measured.
//  Long key sequences (see kLongKeysBytes): 256 queries per block (NV = 16), the
//  same 4-vector register tiles sweeping it 4 times, so each K/V block streamed in
//  from L3/DRAM serves 256 queries; QT, OT and ST (128 KiB) then live in L2.
//  Short query sequences (Tq <= 64, an encoder's sentences, a decoder's step): the
//  64-query blocks of 128 keys the kernel had before, since a 128-query block computes
//  every lane whether or not a query is there (MiniLM at batch 32, T 23, 1 thread: 115
//  ms of the encoder with 64-query blocks, 123 ms with 128).
using K512 = FlashF32<Avx512, 8, 4, 6, 6, 64>;
using K512L = FlashF32<Avx512, 16, 4, 6, 6, 128>;
using K512S = FlashF32<Avx512, 4, 4, 6, 6, 128>;
const Kernel kAvx512Long{"avx512-long", K512L::BQ, &K512L::workspace_floats, &Ftz<&K512L::run_item>::call};
const Kernel kAvx512Short{"avx512-short", K512S::BQ, &K512S::workspace_floats, &Ftz<&K512S::run_item>::call};
const Kernel kAvx512{"avx512", K512::BQ, &K512::workspace_floats, &Ftz<&K512::run_item>::call,
                     &kAvx512Long, &kAvx512Short};

}  // namespace

const Kernel* avx512_kernel() { return &kAvx512; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx512_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
