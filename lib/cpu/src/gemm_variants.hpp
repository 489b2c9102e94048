// lib/cpu/src/gemm_variants.hpp: private. The per-instruction-set GEMM kernels
// (gemm_avx512.cpp, gemm_avx2.cpp, gemm_neon.cpp, gemm_generic.cpp), each null where the build lacks it
// (the generic one never is); gemm.cpp
// chooses.
#pragma once

#include "attn/cpu/gemm.hpp"

namespace attn::gemm::detail {

StridedFn strided_avx512();
StripsFn strips_avx512();
StridedFn strided_avx2();
StripsFn strips_avx2();
StridedFn strided_neon();
StripsFn strips_neon();
StridedFn strided_generic();
StripsFn strips_generic();

}  // namespace attn::gemm::detail
