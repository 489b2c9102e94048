// lib/cpu/src/gemm/gemm_variants.hpp: private. The per-instruction-set GEMM kernels
// (gemm_avx512.cpp, gemm_avx2.cpp, gemm_neon.cpp, gemm_generic.cpp), each null where the build lacks it
// (the generic one never is); gemm.cpp
// chooses.
#pragma once

#include <cstdint>

#include "attn/cpu/gemm_types.hpp"

namespace attn::gemm::detail {

StridedFn strided_avx512();
StripsFn strips_avx512();
StridedFn strided_avx2();
StripsFn strips_avx2();
StridedFn strided_neon();
StripsFn strips_neon();
StridedFn strided_generic();
StripsFn strips_generic();
// the strips on bf16 pairs widened to float32 (gemm_kernel.hpp's WidenedPairs), per family
StripsPairsFn strips_widened_avx512();
StripsPairsFn strips_widened_avx2();
StripsPairsFn strips_widened_neon();
StripsPairsFn strips_widened_generic();
// rows_to_bf16_widened's AVX-512 loop (gemm_bf16_widened.cpp); a no-op in builds without it
void rows_to_bf16_avx512(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp);

}  // namespace attn::gemm::detail
