// The device-independent half of attn/cuda/cuda.hpp (kernel names), and,
// in a build without ATTN_CUDA, the stand-ins that say "no CUDA in this build".
// With ATTN_CUDA the real backend lives in lib/cuda/ (attention_cuda.cpp).
#include "attn/cuda/cuda.hpp"

#include <string>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

const char* cuda_kernel_name(CudaKernel k) {
    switch (k) {
        case CudaKernel::Naive: return "cuda-naive";
        case CudaKernel::Flash: return "cuda-flash";
        case CudaKernel::FlashF16: return "cuda-flash-f16";
        case CudaKernel::FlashBf16: return "cuda-flash-bf16";
    }
    return "cuda-?";
}

std::vector<CudaKernel> all_cuda_kernels() {
    return {CudaKernel::Naive, CudaKernel::Flash, CudaKernel::FlashF16, CudaKernel::FlashBf16};
}

void cuda_check_mask(CudaKernel kernel, const Mask& mask) {
    if (mask.heads() > 1)
        throw InputError(fmt::format("a per-head mask runs on the CPU backends; {} takes one mask row for all heads",
                                     cuda_kernel_name(kernel)));
}

#ifndef ATTN_CUDA

static const char* kNoCuda = "this build has no CUDA backend (configure with cmake --preset cuda)";

bool cuda_compiled() { return false; }

bool cuda_available(std::string* why) {
    if (why != nullptr) *why = kNoCuda;
    return false;
}

void require_cuda() { throw InputError(kNoCuda); }

std::string cuda_device_name() {
    require_cuda();
    return {};
}

Tensor attention_cuda(const Tensor&, const Tensor&, const Tensor&, const Mask&, const AttentionOptions&, CudaKernel,
                      AttentionRecord*, CudaTiming*) {
    require_cuda();
    return {};
}

CudaBenchResult bench_attention_cuda(const Tensor&, const Tensor&, const Tensor&, const Mask&,
                                     const AttentionOptions&, CudaKernel, int, int) {
    require_cuda();
    return {};
}

CudaComparison compare_cuda_to_cpu(const Tensor&, const Tensor&, const Tensor&, const Mask&,
                                   const AttentionOptions&, CudaKernel) {
    require_cuda();
    return {};
}

#endif  // !ATTN_CUDA

}  // namespace attn
