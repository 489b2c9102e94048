// attn/cpu/gemm.hpp: the float32 GEMM kernels under the fast training ops (lib/nn) and
// the encoder's projections (lib/model). Internal to attn: an interface its modules share,
// not one for users (they call attn::nn's ops or BertModel).
//
// One template (src/gemm/gemm_kernel.hpp) over SIMD traits, instantiated per instruction set
// (src/gemm/gemm_avx512.cpp, src/gemm/gemm_avx2.cpp, src/gemm/gemm_neon.cpp on AArch64, src/gemm/gemm_generic.cpp in
// plain C++ for any CPU; on bf16 pairs src/gemm/gemm_bf16.cpp and src/gemm/gemm_bf16_widened.cpp; the AMX tiles
// src/gemm/gemm_amx.cpp) and chosen at run time, under the ATTN_ISA cap of attn/cpu/features.hpp: a build for a
// baseline CPU still runs the AVX-512 kernel on an AVX-512 CPU, and ATTN_ISA=avx2 runs the AVX2 one there. The generic
// kernel runs where it is asked for (callers default to Eigen on a CPU with no SIMD family: its GEMM is faster than the
// plain kernel there); there is none for Isa::amx (the tiles are bf16; amx CPUs take the avx512 kernel).
//
// Every kernel computes every element of the output as init + term 0 + term 1 + ... in
// ascending k, one fused multiply-add per term (the generic kernel: a multiply, then an add),
// whatever register tile, piece of the work or thread computes it: the result does not depend
// on the split or the thread count, and the AVX2, AVX-512 and NEON kernels give the same bits.
#pragma once

#include <cstdint>

#include "attn/cpu/features.hpp"
#include "attn/cpu/gemm_types.hpp"

namespace attn::gemm {

// True when this build has the family's kernels and the CPU runs them under the ATTN_ISA
// cap (isa_cap() throws InputError for a bad ATTN_ISA): always for Isa::generic, never for
// Isa::amx.
bool available(Isa isa);
// The widest available SIMD family; Isa::generic when none is (callers then use Eigen).
Isa best();

// ---- strided A (the training ops)
//
//   C (M, Nc) = init + A (M, K) . B (K, Nc)
//
// A(i, k) = A[i*sai + k*sak], so x . W^T (W^T pre-transposed: sai = lda, sak = 1) and
// G^T . X for a weight gradient (sai = 1, sak = ldg) run without copying G; B and C are
// row-major with leading dimensions ldb, ldc. init: C's own values when accumulate, else
// the bias row (Nc values) when bias is not null, else 0. With sak = 1 and several column
// blocks, B's blocks are first copied side by side into a buffer of the calling thread's (it
// stays allocated, K x Nc floats at most); otherwise B's rows are read in place.
// StridedArgs and StridedFn: attn/cpu/gemm_types.hpp.
// The family's kernel; null where !available(isa).
StridedFn strided(Isa isa);

// ---- packed strips (the encoder)
//
//   out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b       x, out row-major
//
// Wt is packed in strips of kStrip = 32 columns: strip s holds Wt[k][32 s .. 32 s + 31]
// for k = 0..n_in-1, contiguously, zero-padded past n_out (pack_strips). A call computes
// rows [r0, r1) and columns [c0, c1) of out (c0 a multiple of 32), so callers split the
// work into pieces; b may be null (then 0).
constexpr int64_t kStrip = 32;
// Floats pack_strips writes: ceil(n_out / 32) * n_in * 32.
int64_t strips_size(int64_t n_in, int64_t n_out);
// dst (strips_size floats) = Wt (n_in, n_out, row-major) in strips.
void pack_strips(float* dst, const float* Wt, int64_t n_in, int64_t n_out);
// The family's kernel; null where !available(isa).
StripsFn strips(Isa isa);

// ---- bf16 pairs (the encoder's bf16 weights)
//
//   out (N, n_out) = bf16(x) . bf16(Wt) + b, products of bf16 pairs summed in float32
//
// x goes in as rows of kp pairs of bf16 (rows_to_bf16; kp = ceil(n_in / 2) rounded up to a
// multiple of 16, the pairs past n_in zero); the weight as strips of 32 columns of pairs
// (attn::PackedWeightBf16 in lib/model): strip s, pair p, column c is bf16(Wt[2p][32 s + c])
// | bf16(Wt[2p + 1][32 s + c]) << 16. Each element is b[j] + (pair 0) + (pair 1) + ... in
// ascending p, whatever the split or thread count. Rows [r0, r1) and columns [c0, c1) (c0 a
// multiple of 32) of out; b may be null. None checks the CPU: the caller does, as each says.

// True where the CPU runs AVX-512 BF16's vdpbf16ps (under ATTN_ISA) and the build has it
// (GCC 12+ on x86-64): rows_to_bf16 and strips_bf16.
bool bf16_dot_available();
// dst (rows, 2 kp) bf16 = x (rows, n_in) rounded to nearest even; past n_in: 0.
void rows_to_bf16(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp);
void strips_bf16(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                 int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
// The same two on any CPU without the bf16 dot product: each pair's products as two float32
// FMAs on the pair widened by shifts (the AVX-512, AVX2, NEON or generic family's vectors).
// rows_to_bf16_widened runs everywhere (vectorised on AVX-512) and gives rows_to_bf16's bits;
// strips_widened(isa) is null where !available(isa).
void rows_to_bf16_widened(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp);
StripsPairsFn strips_widened(Isa isa);
// The same on AMX tiles, where attn::cpu_amx_bf16_usable(): rows [r0, r1) (r0 a multiple of
// 32) of out's N rows; kp a multiple of 16 and x_pairs whole blocks of 32 rows (zeros past N).
void strips_amx(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                int64_t n_out, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace attn::gemm
