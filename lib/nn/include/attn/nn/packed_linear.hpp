// attn/nn/packed_linear.hpp: the Transformer stack's projections on pre-arranged weights, for
// its batched path (attn/nn/stack.hpp, TransformerStack::forward_batch).
//
//   out (N, n_out) = act(x (N, n_in) . Wt (n_in, n_out) + b)     Wt = W^T of an nn.Linear weight W
//
// Three ways to run it, each the same sum:
//   gemm_wt      Eigen's GEMM on Wt as it is (the readable path the others are tested against)
//   gemm_packed  Wt packed in 32-column strips (PackedWeight) for lib/cpu's strip kernels
//                (attn/cpu/gemm.hpp: AVX-512, AVX2, NEON or generic, chosen at run time under ATTN_ISA)
//   gemm_bf16    Wt rounded to bfloat16 pairs (PackedWeightBf16), x rounded as it goes in, float32 sums:
//                AMX tiles, AVX-512 BF16, or the widest float32 family with the pairs widened by shifts
// Each splits the output into fixed pieces that the threads share, and applies the activation
// to each piece while it is in cache, so the numbers are the same for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/gemm_choice.hpp"

namespace attn {

// The MLP's activation, also what a GEMM applies to its output pieces (None: nothing).
//   GeluTanh  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   GPT-2's gelu_new, attn train's gelu
//   GeluErf   0.5 x (1 + erf(x / sqrt 2))                        BERT's gelu, PyTorch's default
//   Relu      max(0, x)
enum class MlpActivation { None, GeluTanh, GeluErf, Relu };
// y = act(x) for n values, in place allowed (lib/nn's fast row ops: the same numbers as theirs).
void apply_activation(float* y, const float* x, int64_t n, MlpActivation a);

// A transposed nn.Linear weight Wt (n_in, n_out) laid out for the strip kernels: strips of 32
// columns, each (n_in, 32) contiguous, zero-padded past n_out.
struct PackedWeight {
    Tensor strips;  // (ceil(n_out / 32), n_in, 32)
    int64_t n_in = 0, n_out = 0;
    static PackedWeight pack(const Tensor& Wt);  // Wt (n_in, n_out)
};

// The same weight rounded to bfloat16 (nearest even) for gemm_bf16: strips of 32 columns, each
// (kp, 32) pairs of bf16 (k padded to 32), the pair p of column c holding rows 2p and 2p + 1
// (zero past n_in and n_out).
struct PackedWeightBf16 {
    std::vector<uint32_t> pairs;  // (ceil(n_out / 32), kp, 32); kp = ceil(n_in / 32) * 16
    int64_t n_in = 0, n_out = 0, kp = 0;
    static PackedWeightBf16 pack(const Tensor& Wt);  // Wt (n_in, n_out)
};

// The float32 projections' GEMM is a GemmChoice (attn/nn/gemm_choice.hpp): a strip kernel of
// gemm_packed, or Eigen's gemm_wt.

// out = act(x . Wt + b), b may be null; fixed 128-column blocks spread over `threads`.
void gemm_wt(float* out, const float* x, const float* Wt, const float* b, int64_t N, int64_t n_in, int64_t n_out,
             int threads, MlpActivation act = MlpActivation::None);

// gemm_wt with the weight packed: each element summed as b + x(i,0) Wt(0,j) + x(i,1) Wt(1,j) + ...
// in ascending k, so the same for any thread count and any split of the work; the AVX-512, AVX2
// and NEON kernels use fused multiply-adds and agree bit for bit, the generic one multiplies then
// adds. Returns false (computing nothing) where that kernel does not run here, for Eigen, or when
// w is empty.
bool gemm_packed(float* out, const float* x, const PackedWeight& w, const float* b, int64_t N, int threads,
                 MlpActivation act = MlpActivation::None, GemmChoice which = GemmChoice::Best);
// True when gemm_packed runs here with that choice (Best: the CPU has AVX-512, AVX2 or NEON).
bool gemm_packed_available(GemmChoice which = GemmChoice::Best);
// True on every CPU: AMX tiles or AVX-512 BF16 where the CPU has them, else the pairs widened.
bool gemm_bf16_available();
// out = act(bf16(x) . w + b) for w = PackedWeightBf16::pack(Wt). amx: on AMX tiles where
// cpu_amx_bf16_usable(), else (or false) AVX-512 BF16, else the widest float32 family with the
// pairs widened. Returns false, computing nothing, where w is empty. scratch (optional): the
// bf16 copy of x, reused from one call to the next.
bool gemm_bf16(float* out, const float* x, const PackedWeightBf16& w, const float* b, int64_t N, int threads,
               MlpActivation act = MlpActivation::None, bool amx = true, std::vector<uint16_t>* scratch = nullptr);
// The kernel a float32 choice runs: "avx512", "avx2", "neon", "generic" or "eigen"; the bf16
// GEMM's: "amx-bf16", "avx512-bf16" or "<family>-widened-bf16". InputError (naming `who`) when
// `which` forces a kernel this CPU does not run (under ATTN_ISA).
std::string gemm_kernel_name(GemmChoice which, bool bf16, bool amx, const std::string& who);

}  // namespace attn
