// lib/cpu/src/gemm/gemm_generic.cpp: the float32 GEMMs (gemm_kernel.hpp) in plain C++, for any
// CPU: the flash kernels' Generic traits (GCC/Clang vector extension, 8 floats, lowered to
// whatever the build targets: two SSE2 registers on baseline x86-64, NEON pairs on Arm) plus
// lane masks through a buffer (BufferMasks), as the NEON traits do. It is the Isa::generic family, so
// ATTN_ISA=generic runs the same template as the SIMD families instead of leaving the
// training ops and the encoder to Eigen.
//
// Summation order as in every family (init + term 0 + term 1 + ... in ascending k, whatever
// the tile, split or thread count), but each term is a multiply then an add: C++20 (ISO mode)
// does not contract a * b + c into a fused multiply-add, so the generic kernel is within the
// same error bound as the others (tests/test_cpu_gemm.cpp) without being their bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "flash/flash_args.hpp"
#include "flash/flash_kernel.hpp"
#include "flash/flash_generic_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_variants.hpp"

namespace attn::gemm {
namespace {

// F32Strip: the strip operands; BufferMasks: lane counts as masks (gemm_kernel.hpp)
struct Generic : BufferMasks<F32Strip<flash_detail::Generic>> {};

// Register tiles sized for the narrowest target, SSE2's 16 registers (a vector of 8 floats is
// two of them): 6 rows x 1 vector = 12 registers of accumulators + 2 of B (or of the strip
// row) + 1 broadcast, 12 multiply-adds of 4 lanes per 2 vector and 6 scalar loads. Two vectors
// wide would leave room for 3 rows (spilling one register), 1.5 loads per multiply-add.
void strided_run(const StridedArgs& g) { gemm_run<Generic, 6, 1>(g); }

void strips_call(float* out, const float* x, const float* w, const float* b, int64_t n_in, int64_t n_out, int64_t r0,
                 int64_t r1, int64_t c0, int64_t c1) {
    strips_run<Generic, 6, 1>(out, x, w, b, n_in, n_out, r0, r1, c0, c1);
}

// bf16 pairs widened (WidenedPairs): 3 rows x 1 vector = 6 SSE2 registers of accumulators + 4
// of the widened strip pair + 4 of the widened x pair.
void strips_widened_call(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                         int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    strips_run<WidenedPairs<Generic>, 3, 1>(out, xp, w, b, kp, n_out, r0, r1, c0, c1);
}

}  // namespace

StridedFn detail::strided_generic() { return &strided_run; }
StripsFn detail::strips_generic() { return &strips_call; }
StripsPairsFn detail::strips_widened_generic() { return &strips_widened_call; }

}  // namespace attn::gemm
