// attn/cuda/cuda.hpp: the CUDA backend of scaled dot-product attention.
//
// Same inputs, masks, options and result as attention_reference (attn/core/attention.hpp),
// computed on an NVIDIA GPU. A plain C++ header: no CUDA types, so every part of
// attn can include it whether or not the build has CUDA. In a build without
// ATTN_CUDA (the default) every call that needs a GPU throws InputError with a
// one-line message, and cuda_available() says why it is false.
//
// The kernels, one reason each to exist (lib/cuda/, in the spirit of llm.c's dev/cuda):
//   cuda-naive       the readable path: Q·Kᵀ by cuBLAS, one fused kernel for scale +
//                    mask + stable softmax + dropout, weights·V by cuBLAS. Holds the
//                    whole (B, H, Tq, Tk) score matrix, so it can hand back every
//                    intermediate (AttentionRecord), exactly like the CPU reference.
//   cuda-flash       float32 FlashAttention: K/V tiles in shared memory, online softmax,
//                    never forms the score matrix; skips fully masked tiles.
//   cuda-flash-f16   the same on tensor cores (mma.sync m16n8k16), inputs rounded to
//   cuda-flash-bf16  fp16 / bf16, float32 accumulation and softmax, float32 output.
//
// Dropout uses the CPU's decision bit for bit (attn::dropout_drops(seed, flat index, p)),
// so the same seed drops the same weights on either device.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attn/core/attention.hpp"

namespace attn {

enum class CudaKernel { Naive, Flash, FlashF16, FlashBf16 };

// "cuda-naive" | "cuda-flash" | "cuda-flash-f16" | "cuda-flash-bf16": also the
// names of these kernels' rows in the backend table (attn/nn/backend.hpp).
const char* cuda_kernel_name(CudaKernel k);
std::vector<CudaKernel> all_cuda_kernels();

// The GPU kernels read one mask row per batch row, shared by every head: a per-head
// mask (mask.heads() > 1) is refused with InputError "a per-head mask runs on the CPU
// backends; cuda-flash takes one mask row for all heads". The kernels check it at the
// call; a caller may check it before any work. Compiled in every build.
void cuda_check_mask(CudaKernel kernel, const Mask& mask);

// True when this build has the CUDA backend (configured with -DATTN_CUDA=ON).
bool cuda_compiled();
// True when the backend is built AND a GPU it has code for is usable. Otherwise
// false, and *why (when given) gets a one-line reason.
bool cuda_available(std::string* why = nullptr);
// Throws InputError(<the reason>) unless cuda_available().
void require_cuda();
// "NVIDIA H200 (sm_90, 139.8 GiB)"; throws like require_cuda.
std::string cuda_device_name();

struct CudaTiming {
    double upload_ms = 0;    // host -> device copies (and the fp16/bf16 rounding)
    double kernel_ms = 0;    // the attention itself, timed with cudaEvents
    double download_ms = 0;  // device -> host copies of the output and the record
};

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> out (B, H, Tq, Dv), as
// attention_reference. rec (only with CudaKernel::Naive; the flash kernels never
// form the intermediates and throw InputError if asked) receives every
// (B, H, Tq, Tk) intermediate copied back from the GPU.
// Limits: Dk, Dv <= 256 for cuda-flash, <= 128 for the tensor-core kernels; B·H <= 65535.
// Throws InputError when CUDA is unavailable, on bad shapes (as the reference),
// and when the GPU runs out of memory.
Tensor attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                      const AttentionOptions& opt, CudaKernel kernel = CudaKernel::Naive,
                      AttentionRecord* rec = nullptr, CudaTiming* timing = nullptr);

struct CudaBenchResult {
    std::string kernel;      // cuda_kernel_name
    std::string device;      // cuda_device_name
    int reps = 0;
    double mean_ms = 0, median_ms = 0, min_ms = 0, max_ms = 0;  // per call, inputs already on the GPU
    double flops = 0;        // attention_flops (attn/core/cost.hpp) of one call
    double tflops = 0;       // flops / mean_ms
};

// Times `reps` calls (after `warmup` untimed ones) with cudaEvents around the
// kernels alone: inputs are uploaded (and rounded to fp16/bf16) once, before
// timing; nothing is copied back inside the timed region.
CudaBenchResult bench_attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                     const AttentionOptions& opt, CudaKernel kernel, int reps = 10,
                                     int warmup = 2);

// The same input through the CPU reference and through a CUDA kernel (for the
// lesson "same numbers on the GPU?" and for gpu checks).
struct CudaComparison {
    std::string kernel, device;
    double max_abs_diff = 0;   // largest |gpu - cpu| over finite pairs
    double max_rel_diff = 0;   // largest |gpu - cpu| / max(|cpu|, 1e-6) over finite pairs
    double nmse = 0;           // sum (gpu - cpu)^2 / sum cpu^2 (0 when cpu is all zero)
    int64_t nonfinite_mismatches = 0;  // entries where exactly one side, or different kinds, are non-finite
    double cpu_ms = 0, gpu_ms = 0;     // wall time of each call (GPU: kernels only)
};
CudaComparison compare_cuda_to_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                   const AttentionOptions& opt, CudaKernel kernel);

}  // namespace attn
