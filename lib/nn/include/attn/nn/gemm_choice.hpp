// attn/nn/gemm_choice.hpp: the float32 GEMM kernels of lib/nn, one list and one dispatcher for
// both users: the training ops (attn/nn/fast_ops.hpp, one process-wide choice) and the
// Transformer stack's projections (attn/nn/packed_linear.hpp, a choice per call).
//
//   best      the widest SIMD family this CPU runs under ATTN_ISA: AVX-512, else AVX2, else NEON
//             (AArch64); Eigen on a CPU with none, where Eigen outruns the plain C++ kernel
//   avx512, avx2, neon   that family's register-tile kernel (lib/cpu/src/gemm: every element
//             summed over k in ascending order with fused multiply-adds)
//   generic   the plain C++ kernel (each product rounded, then added)
//   eigen     Eigen's GEMM: the readable path the others are tested against (and every double op)
// A kernel the CPU does not run is refused, never quietly swapped for another. Each is
// deterministic at any thread count; two kernels differ by float rounding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class GemmChoice { Best, Avx512, Avx2, Neon, Generic, Eigen };

// Every choice in the order above: what a --gemm option takes.
const std::vector<GemmChoice>& gemm_choices();
const char* gemm_choice_name(GemmChoice g);  // "best", "avx512", "avx2", "neon", "generic", "eigen"
// The choice called `name`, or nothing.
std::optional<GemmChoice> find_gemm_choice(std::string_view name);
// "best, avx512, avx2, neon, generic or eigen": for a message that lists them.
std::string gemm_choice_names();
// True when g runs here (best and eigen always; a kernel where the CPU, the build and ATTN_ISA allow).
bool gemm_choice_available(GemmChoice g);
// What g runs here: best resolved to its kernel or eigen (never Best); the others as they are.
GemmChoice resolve_gemm_choice(GemmChoice g);
// Throws InputError "<who>: the <name> GEMM does not run on this CPU[ under ATTN_ISA=...] (use best
// or eigen)" unless gemm_choice_available(g).
void require_gemm_choice(GemmChoice g, const std::string& who);

}  // namespace attn
