// lib/cpu/src/gemm/gemm_neon.cpp: the float32 GEMMs (gemm_kernel.hpp) for AArch64 NEON, 4 lanes.
// NEON is part of every AArch64 CPU, so no target pragma is needed; elsewhere the file
// compiles to two null entries, and gemm.cpp chooses it at run time on aarch64 unless
// ATTN_ISA=generic. Every element is summed as in the x86 kernels (init + term 0 + term 1 +
// ... in ascending k, one fused multiply-add per term), so it gives their bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "flash/flash_args.hpp"
#include "gemm_variants.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_neon_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_neon_traits.hpp"

namespace attn::gemm {
namespace {

// Register tiles, 32 vector registers of 4 floats; each k step also holds a tile's row values
// of A (x) as scalars in vector registers (GCC multiplies by them with fmla by element, the
// instruction of vfmaq_laneq_f32), one register each: A is read through two strides, so its
// values are not one vector load. Strided: 7 rows x 3 vectors (12 columns) = 21 accumulators
// + 3 B vectors + 7 A values = 31 registers, 21 FMAs per 3 vector and 7 scalar loads. 8 x 3
// (24 + 3 + 8 = 35) spilled accumulators to the stack inside the k loop (GCC 12, read in the
// disassembly); 7 x 3 does not.
void strided_run(const StridedArgs& g) { gemm_run<Neon, 7, 3, false>(g); }

// Strips: the tile's width divides the 32-column strip (1, 2, 4 or 8 vectors). 5 rows x 4
// vectors (16 columns, the strip in two passes) = 20 accumulators + 4 strip vectors + 5 x
// values = 29 registers, 20 FMAs per 4 vector and 5 scalar loads; 6 x 4 (34) spilled in the
// k loop, 3 x 8 (a whole strip: 24 + 8 + 3) too.
void strips_call(float* out, const float* x, const float* w, const float* b, int64_t n_in, int64_t n_out, int64_t r0,
                 int64_t r1, int64_t c0, int64_t c1) {
    strips_run<Neon, 5, 4>(out, x, w, b, n_in, n_out, r0, r1, c0, c1);
}

// bf16 pairs widened (WidenedPairs): 5 rows x 4 vectors = 20 accumulators + 4 widened strip
// pairs (8 registers) + 1 widened x pair (2) = 30 of 32.
void strips_widened_call(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                         int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    strips_run<WidenedPairs<Neon>, 5, 4>(out, xp, w, b, kp, n_out, r0, r1, c0, c1);
}

}  // namespace

StridedFn detail::strided_neon() { return &strided_run; }
StripsFn detail::strips_neon() { return &strips_call; }
StripsPairsFn detail::strips_widened_neon() { return &strips_widened_call; }

}  // namespace attn::gemm

#else
namespace attn::gemm {
StridedFn detail::strided_neon() { return nullptr; }
StripsFn detail::strips_neon() { return nullptr; }
StripsPairsFn detail::strips_widened_neon() { return nullptr; }
}  // namespace attn::gemm
#endif
