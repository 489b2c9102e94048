// lib/cuda/gpu/naive.cu: the readable CUDA path, step for step the CPU reference.
//
//   scores  = Q Kᵀ                        cuBLAS (attention_cuda.cpp) or gemm_tiled below
//   weights = softmax_rows_kernel(scores) scale + additive + mask + stable softmax + dropout,
//                                         one block per row, one fused kernel
//   out     = weights V                   cuBLAS or gemm_tiled
//
// Every intermediate lives in GPU memory as a (B, H, Tq, Tk) tensor, so it can be
// copied back for lessons and the JSON dump. Two reasons these kernels exist:
// they are the GPU's reference (the flash kernels are checked against the CPU
// directly, but a wrong answer here is easy to read), and they are the baseline
// the flash kernels' speed is measured against.
#include <cfloat>

#include "common.cuh"

namespace attn::cuda_detail {

// ---------------------------------------------------------------------------
// gemm_tiled: C[bat] (M, N) = A[bat] (M, K) · op(B[bat]), op(B) = Bᵀ when B is
// stored (N, K) (trans_b), else B (K, N). 16x16 tiles through shared memory.
// Reason to exist: the readable path without cuBLAS (a toolkit without it still
// builds), and a GEMM simple enough to read in one sitting.
constexpr int GT = 16;

template <bool trans_b>
__global__ void gemm_tiled(const float* A, const float* Bm, float* C, int64_t M, int64_t N, int64_t K) {
    // A (batch, M, K), B (batch, N, K) or (batch, K, N), C (batch, M, N); blockIdx.z = batch
    __shared__ float As[GT][GT + 1];
    __shared__ float Bs[GT][GT + 1];
    const int64_t bat = blockIdx.z;
    A += bat * M * K;
    Bm += bat * N * K;
    C += bat * M * N;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t row = static_cast<int64_t>(blockIdx.y) * GT + ty;  // of C
    const int64_t col = static_cast<int64_t>(blockIdx.x) * GT + tx;  // of C
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += GT) {
        // pass 1: stage a 16x16 tile of A and of op(B); zeros past the edges
        const int64_t ak = k0 + tx, bk = k0 + ty;
        As[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        if (trans_b) {
            const int64_t bn = static_cast<int64_t>(blockIdx.x) * GT + ty, bkk = k0 + tx;  // coalesced along K
            Bs[tx][ty] = (bn < N && bkk < K) ? Bm[bn * K + bkk] : 0.0f;                  // Bs[k][n]
        } else {
            Bs[ty][tx] = (bk < K && col < N) ? Bm[bk * N + col] : 0.0f;
        }
        __syncthreads();
        // pass 2: the partial dot product
        for (int kk = 0; kk < GT; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

void launch_gemm_qk(const float* q, const float* k, float* s, const AttnArgs& a, cudaStream_t st) {
    // q (BH, Tq, Dk) · k (BH, Tk, Dk)ᵀ -> s (BH, Tq, Tk)
    const dim3 block(GT, GT), grid(static_cast<unsigned>((a.Tk + GT - 1) / GT),
                                   static_cast<unsigned>((a.Tq + GT - 1) / GT), static_cast<unsigned>(a.B * a.H));
    gemm_tiled<true><<<grid, block, 0, st>>>(q, k, s, a.Tq, a.Tk, a.Dk);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

void launch_gemm_pv(const float* w, const float* v, float* out, const AttnArgs& a, cudaStream_t st) {
    // w (BH, Tq, Tk) · v (BH, Tk, Dv) -> out (BH, Tq, Dv)
    const dim3 block(GT, GT), grid(static_cast<unsigned>((a.Dv + GT - 1) / GT),
                                   static_cast<unsigned>((a.Tq + GT - 1) / GT), static_cast<unsigned>(a.B * a.H));
    gemm_tiled<false><<<grid, block, 0, st>>>(w, v, out, a.Tq, a.Dv, a.Tk);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------------------
// softmax_rows_kernel: one block per score row (b, h, i). Reason to exist: the
// reference's passes 2-4 fused, so the (Tq, Tk) matrix is read once per pass and
// every intermediate can still be written out when recording.
constexpr int SM_THREADS = 256;

__device__ inline float block_reduce(float v, bool is_max, float* scratch) {
    // warp shuffles, then one value per warp through shared memory
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? max_nan(v, o) : v + o;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < SM_THREADS / 32; ++w) v = is_max ? max_nan(v, scratch[w]) : v + scratch[w];
    return v;
}

__global__ void softmax_rows_kernel(const float* raw, float* scaled_out, float* masked_out, float* weights_out,
                                    float* final_out, AttnArgs a) {
    // raw, *_out: (B, H, Tq, Tk); this block: row (bh, i)
    __shared__ float scratch[SM_THREADS / 32];
    const int64_t row = blockIdx.x;  // = bh * Tq + i
    const int64_t i = row % a.Tq;
    const MaskRow& mask = a.mask[(row / a.Tq) / a.H];
    const int64_t n = a.Tk;
    const float* x = raw + row * n;
    float* y = final_out + row * n;

    // pass 1: scale, additive mask, masked_fill; row max
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += SM_THREADS) {
        const float s = x[j] * a.scale + mask.additive_at(i, j);
        const float m = mask.allowed(i, j) ? s : a.fill;
        if (scaled_out != nullptr) scaled_out[row * n + j] = s;
        if (masked_out != nullptr) masked_out[row * n + j] = m;
        y[j] = m;  // same element, same thread: safe when y aliases x
        mx = max_nan(mx, m);
    }
    mx = block_reduce(mx, true, scratch);

    // pass 2: exp(x - max) and the sum; a row of only -inf gets weights 0 (attention.hpp)
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += SM_THREADS) {
        const float e = mx == -INFINITY ? 0.0f : expf(y[j] - mx);
        y[j] = e;
        sum += e;
    }
    sum = block_reduce(sum, false, scratch);
    const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;

    // pass 3: normalise, then dropout with the CPU's decision for flat index (row, j)
    const bool dropping = a.dropout > 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += SM_THREADS) {
        const float w = y[j] * inv;
        if (weights_out != nullptr) weights_out[row * n + j] = w;
        y[j] = (dropping && dropout_drops_dev(a.seed, static_cast<uint64_t>(row * n + j), a.dropout))
                   ? 0.0f
                   : (dropping ? w * a.keep_scale : w);
    }
}

void launch_softmax_rows(const float* raw, float* scaled, float* masked, float* weights, float* final_out,
                         const AttnArgs& a, cudaStream_t st) {
    const int64_t rows = a.B * a.H * a.Tq;
    if (rows == 0) return;
    softmax_rows_kernel<<<static_cast<unsigned>(rows), SM_THREADS, 0, st>>>(raw, scaled, masked, weights, final_out,
                                                                            a);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

__global__ void probe_kernel(int* x) {
    if (x != nullptr) *x = 1;
}

cudaError_t probe_kernel_image() {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, probe_kernel);
}

}  // namespace attn::cuda_detail
