// lib/cpu/src/gemm/gemm_scratch.hpp: private. The strided kernels' per-thread copy of B.
#pragma once

#include <cstdint>

namespace attn::gemm::detail {

// A buffer of at least `floats` floats, this thread's own, kept between calls (the strided
// kernels' copy of B). Defined in gemm_scratch.cpp, outside every target region, so that the
// std::vector code behind it is never compiled for an instruction set the CPU may lack (a
// template instantiated inside a region is compiled for that region's instructions, and its
// out-of-line copy could be the one the linker keeps for every caller).
float* thread_scratch(int64_t floats);

}  // namespace attn::gemm::detail
