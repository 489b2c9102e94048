// lib/cuda/gpu/cuda_internal.hpp: what the host side (attention_cuda.cpp) and the
// kernels (*.cu) share: the argument structs and the launchers. Plain C++ plus
// the CUDA runtime API; no device code here.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "attn/core/mask_row.hpp"

namespace attn::cuda_detail {

// Throws std::runtime_error (a bug) or, for out-of-memory, attn::InputError.
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);

#define ATTN_CUDA_CHECK(call)                                                                     \
    do {                                                                                          \
        const cudaError_t attn_err_ = (call);                                                     \
        if (attn_err_ != cudaSuccess) ::attn::cuda_detail::throw_cuda_error(attn_err_, #call, __FILE__, __LINE__); \
    } while (0)

// Everything a kernel needs besides the tensors.
struct AttnArgs {
    int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dk = 0, Dv = 0;
    float scale = 1.0f;      // applied to raw q·k
    float fill = 0.0f;       // masked_fill value (may be -inf)
    float dropout = 0.0f;    // p, > 0 only when training
    float keep_scale = 1.0f; // 1 / (1 - p)
    uint64_t seed = 0;
    const MaskRow* mask = nullptr;  // [B] in device memory: attn::Mask::row(b, Tk) with device pointers
};

// Test hook: true makes the readable path use the tiled GEMM kernel even when
// cuBLAS is compiled in, so the parity tests cover both (tests/test_cuda.cpp).
void force_tiled_gemm(bool on);
bool tiled_gemm_forced();

// --- readable path (naive.cu) ---
// Scores (BH, Tq, Tk) = Q Kᵀ and out (BH, Tq, Dv) = W V with the plain tiled kernel.
void launch_gemm_qk(const float* q, const float* k, float* s, const AttnArgs& a, cudaStream_t st);
void launch_gemm_pv(const float* w, const float* v, float* out, const AttnArgs& a, cudaStream_t st);
// One fused pass per row over raw scores: scale (+ additive), mask, stable softmax,
// dropout. `final_out` (what W·V reads) may alias `raw`. The three record pointers
// may be null; when given they receive scores_scaled, scores_masked and weights.
void launch_softmax_rows(const float* raw, float* scaled, float* masked, float* weights, float* final_out,
                         const AttnArgs& a, cudaStream_t st);

// --- flash kernels ---
// q, k, v, out are contiguous (BH, T, d); the flash kernels need max(Dk, Dv)
// <= flash_f32_max_d() / flash_mma_max_d().
int flash_f32_max_d();
int flash_mma_max_d();
void launch_flash_f32(const float* q, const float* k, const float* v, float* out, const AttnArgs& a,
                      cudaStream_t st);
enum class Half { F16, Bf16 };
// q, k, v hold 16-bit values (fp16 or bf16 as `h` says); out is float32.
void launch_flash_mma(Half h, const void* q, const void* k, const void* v, float* out, const AttnArgs& a,
                      cudaStream_t st);
// Warps per block of the tensor-core kernels: 4 (64 query rows, the default) or 8
// (128 rows). A tuning knob for attn_cuda_bench and the parity tests, not an API.
void set_flash_mma_warps(int warps);
// float32 -> fp16 / bf16, round to nearest even.
void launch_to_half(Half h, const float* src, void* dst, int64_t n, cudaStream_t st);

// A kernel probe for cuda_available(): fails with cudaErrorNoKernelImageForDevice
// when this build has no code for the GPU.
cudaError_t probe_kernel_image();

}  // namespace attn::cuda_detail
