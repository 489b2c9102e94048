// lib/cpu/src/gemm/gemm_scratch.cpp: the strided kernels' per-thread buffer (gemm_scratch.hpp),
// compiled outside every target region.
#include "gemm_scratch.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::gemm::detail {

float* thread_scratch(int64_t floats) {
    thread_local std::vector<float> buf;
    if (buf.size() < static_cast<size_t>(floats)) buf.resize(static_cast<size_t>(floats));
    return buf.data();
}

}  // namespace attn::gemm::detail
