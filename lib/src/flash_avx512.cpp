// lib/src/flash_avx512.cpp: the float32 flash kernel for AVX-512 (16 lanes).
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

#include "attn/mask.hpp"
#include "attn/rng.hpp"
#include "flash_args.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash_kernel.hpp"

namespace attn::flash_detail {
namespace {

struct Avx512 {
    using V = __m512;
    static constexpr int W = 16;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V finite_or_zero(V x) {
        const __mmask16 ninf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);
        return _mm512_mask_blend_ps(ninf, x, _mm512_setzero_ps());
    }
    // 2^x for x <= 0: x = n + f, n = round(x), |f| <= 1/2; 2^f by its Taylor
    // polynomial of degree 6 (relative error < 2e-7 on |f| <= 1/2), then
    // vscalefps multiplies by 2^n, flushing to exactly 0 far below the float
    // range. -inf and NaN are clamped to -160 first, whose result is exactly 0.
    static V exp2(V x) {
        x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));
        const V n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const V f = _mm512_sub_ps(x, n);
        V p = _mm512_set1_ps(1.5403530393381608e-4f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618129107628477e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550410866482158e-2f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2402265069591007f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931471805599453f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
        return _mm512_scalef_ps(p, n);
    }
};

// Block sizes (Zen 4 here: 32 KiB L1d, 1 MiB L2 per core, 32 zmm registers):
//  NV = 4: a query block is 64 queries = 4 zmm; RS = RP = 6: the register tile is
//  6 x 4 = 24 accumulators + 4 loaded vectors + 1 broadcast = 29 of 32 registers,
//  and each step issues 24 FMAs per 4 loads + 6 broadcasts.
//  BK = 64 keys: with Dk = Dv = 64, pass 2 touches QT (16 KiB) + the K block
//  (16 KiB) + ST (16 KiB) and pass 4 ST + the V block + OT (16 KiB each): 48 KiB,
//  L1-and-a-half, all in L2. A smaller BK re-reads and rescales OT more often per
//  FMA (OT is loaded and stored once per key block); 32 measured slower (docs/performance.md).
using K512 = FlashF32<Avx512, 4, 6, 6, 64>;
const Kernel kAvx512{"avx512", K512::BQ, &K512::workspace_floats, &K512::run_item};

}  // namespace

const Kernel* avx512_kernel() { return &kAvx512; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx512_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
