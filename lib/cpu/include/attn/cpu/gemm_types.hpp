// attn/cpu/gemm_types.hpp: the argument block and the function types of the GEMM kernels of
// attn/cpu/gemm.hpp (which says what each computes), in a header of their own so that the
// per-instruction-set kernel files (src/gemm/gemm_variants.hpp) need the types, not the
// dispatcher. Internal to attn.
#pragma once

#include <cstdint>

namespace attn::gemm {

// C (M, Nc) = init + A (M, K) . B (K, Nc), A(i, k) = A[i*sai + k*sak] (attn/cpu/gemm.hpp).
struct StridedArgs {
    int64_t M = 0, Nc = 0, K = 0;
    const float* A = nullptr;
    int64_t sai = 0, sak = 0;
    const float* B = nullptr;
    int64_t ldb = 0;
    float* C = nullptr;
    int64_t ldc = 0;
    const float* bias = nullptr;
    bool accumulate = false;
    bool prefetch_b = false;  // B is cold memory: the first row tile prefetches its rows ahead
};
using StridedFn = void (*)(const StridedArgs&);
// The block for C (M, Nc) (+)= A . B (+ bias), A(i, k) = A[i*sai + k*sak], B and C row-major.
inline StridedArgs strided_args(int64_t M, int64_t Nc, int64_t K, const float* A, int64_t sai, int64_t sak,
                                const float* B, int64_t ldb, float* C, int64_t ldc, const float* bias,
                                bool accumulate) {
    StridedArgs g;
    g.M = M;
    g.Nc = Nc;
    g.K = K;
    g.A = A;
    g.sai = sai;
    g.sak = sak;
    g.B = B;
    g.ldb = ldb;
    g.C = C;
    g.ldc = ldc;
    g.bias = bias;
    g.accumulate = accumulate;
    return g;
}
// out rows [r0, r1), columns [c0, c1) = x . Wt + b, Wt packed in strips of 32 columns.
using StripsFn = void (*)(float* out, const float* x, const float* strips, const float* b, int64_t n_in,
                          int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
// the same on bf16 pairs (x and the weight as pairs of bf16, products summed in float32).
using StripsPairsFn = void (*)(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                               int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace attn::gemm
