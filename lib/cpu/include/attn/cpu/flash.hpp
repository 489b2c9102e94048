// attn/cpu/flash.hpp: tiled attention with an online softmax (FlashAttention's
// forward on the CPU). Same inputs and result as attention_reference (within
// float32 rounding), without ever holding the (Tq, Tk) score matrix.
//
// Work is split over (batch, head, block of queries) with attn::parallel_for;
// each thread keeps O(block * (Dk + Dv)) floats of scratch. Kernels: "avx512"
// (16 lanes), "avx2" (8 lanes, FMA), on AArch64 "neon" (4 lanes, FMA), "generic"
// (plain C++). The best one the CPU supports is picked at run time
// (__builtin_cpu_supports), also in the portable build, where the x86 vector kernels
// are compiled with target pragmas.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attn/core/attention.hpp"

namespace attn {

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> (B, H, Tq, Dv).
// Masks, scales, the fully-masked-row rule and dropout as in attention_reference.
// threads = 0: all hardware threads.
Tensor attention_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                       const AttentionOptions& opt, int threads = 0);

// The float32 kernels this build can run on this CPU, best first
// (e.g. {"avx512", "avx512-long", "avx512-short", "avx2", "generic"}; "avx512-long" has
// 256-query blocks, which "auto" uses when one head's K and V exceed 4 MiB, "avx512-short"
// 64-query blocks, which it uses when there are at most 64 queries).
std::vector<std::string> flash_kernels();

// attention_flash with a chosen kernel: "auto" (the best) or a name from
// flash_kernels(). Throws InputError for an unknown or unsupported one.
// lse, when given, receives the row log-sum-exp the backward pass needs
// (attn/cpu/flash_backward.hpp): (B, H, Tq), L[i] = ln sum_j exp(s_ij) over the
// scaled, masked scores of row i (natural log; -inf for a row whose weights are
// all 0: every key masked with fill -inf, or no keys). The weights are then
// P_ij = exp(s_ij - L_i). Not asking costs nothing: one pointer test per block.
Tensor attention_flash_with(std::string_view kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Mask& mask, const AttentionOptions& opt, int threads = 0,
                            Tensor* lse = nullptr);

// True when some bf16 path runs here (below): on every CPU, the generic path at least.
bool flash_bf16_supported();

// The bf16 kernels this build can run on this CPU, best first: "amx" (Intel AMX
// tiles, TDPBF16PS; needs AMX-TILE, AMX-BF16, AVX-512 BF16 and the Linux kernel's
// permission for the tile state), "avx512-bf16" (vdpbf16ps), then, where the CPU
// has no bf16 instruction, "avx512", "avx2", "neon" (AArch64) and "generic" (plain C++,
// any CPU): the float32 kernel of that family on operands rounded to bf16 values (a
// product of two bf16 values is exact in float32, so these add the same products in
// float32, with the same error bound). ATTN_ISA lowers the list as it lowers the float32
// kernels; "generic" is always in it.
std::vector<std::string> flash_bf16_paths();

// The path attention_flash_bf16 takes here: flash_bf16_paths().front().
std::string flash_bf16_path();

// The same attention with Q, K, V and the softmax weights rounded to bfloat16
// and float32 accumulation. Its error against float32 is of the
// order of bf16's 2^-8 relative precision (see docs/performance.md); the test
// suite bounds it. The paths without a bf16 instruction round K and V into a float32
// copy first; a calling thread keeps that room (up to 64 MiB) for its next call.
Tensor attention_flash_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                            const AttentionOptions& opt, int threads = 0);

// attention_flash_bf16 on a chosen path: "auto" or a name from flash_bf16_paths().
// Throws InputError for an unknown one or one this CPU cannot run.
Tensor attention_flash_bf16_with(std::string_view path, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Mask& mask, const AttentionOptions& opt, int threads = 0);

}  // namespace attn
