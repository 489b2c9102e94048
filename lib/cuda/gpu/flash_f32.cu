// lib/cuda/gpu/flash_f32.cu: FlashAttention's forward in float32, no tensor cores.
//
// Reason to exist: the online softmax on the GPU in its plainest form, and the
// float32 path that never holds the (Tq, Tk) score matrix (memory O(T), not O(T²)).
//
// Work split: a block of 128 threads takes ROWS query rows of one (b, h). Each
// query row belongs to TPR adjacent threads; each of them keeps CH of the row's
// D = CH·TPR dimensions of q and of the output accumulator in registers. K and V
// tiles of BC keys are staged through shared memory, where every thread of the
// block reads the same key at the same time (a broadcast, no bank conflicts).
// Per key: dot = Σ over the TPR partners (warp shuffles), then the online softmax:
//   m_new = max(m, s_j);  l = l·e^(m - m_new) + e^(s_j - m_new);  acc = acc·e^(m - m_new) + e^(s_j - m_new)·v_j
// done for SUB keys at a time so the rescale costs little. At the end out = acc / l
// (0 for a row whose every score is -inf, the reference's rule).
#include "common.cuh"

namespace attn::cuda_detail {

constexpr int F32_THREADS = 128;
constexpr int F32_SUB = 16;  // keys per online-softmax step

template <int CH, int TPR>
__global__ void __launch_bounds__(F32_THREADS)
    flash_f32_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                     float* __restrict__ out, AttnArgs a) {
    // q (BH, Tq, Dk), k (BH, Tk, Dk), v (BH, Tk, Dv) -> out (BH, Tq, Dv); D = CH·TPR >= Dk, Dv
    constexpr int D = CH * TPR;
    constexpr int ROWS = F32_THREADS / TPR;
    constexpr int BCT = 4096 / D;  // keys per tile: the K and V tiles take 2·BCT·D·4 B = 32 KiB
    static_assert(BCT % F32_SUB == 0, "tile must hold whole steps");
    __shared__ __align__(16) float Ks[BCT][D];
    __shared__ __align__(16) float Vs[BCT][D];

    const int64_t bh = blockIdx.y;
    const MaskRow& mask = a.mask[bh / a.H];
    const int row = threadIdx.x / TPR, part = threadIdx.x % TPR;
    const int64_t q_lo = static_cast<int64_t>(blockIdx.x) * ROWS;
    const int64_t i = q_lo + row;
    const bool live = i < a.Tq;
    const int64_t ic = live ? i : a.Tq - 1;  // dead threads compute on a valid row, write nothing
    const int d0 = part * CH;

    // this thread's slice of q, zero past Dk
    float qr[CH], acc[CH];
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        const int64_t d = d0 + c;
        qr[c] = d < a.Dk ? q[(bh * a.Tq + ic) * a.Dk + d] : 0.0f;
        acc[c] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;

    const int64_t q_hi = q_lo + ROWS - 1 < a.Tq - 1 ? q_lo + ROWS - 1 : a.Tq - 1;
    const int64_t k_end = key_end(a, mask, q_hi);
    const float* kb = k + bh * a.Tk * a.Dk;
    const float* vb = v + bh * a.Tk * a.Dv;
    const bool dropping = a.dropout > 0.0f;

    for (int64_t k0 = 0; k0 < k_end; k0 += BCT) {
        // pass 1: stage BCT keys of K and V (zeros past Tk, Dk, Dv)
        __syncthreads();
        for (int e = threadIdx.x; e < BCT * D; e += F32_THREADS) {
            const int jj = e / D, d = e % D;
            const int64_t j = k0 + jj;
            Ks[jj][d] = (j < a.Tk && d < a.Dk) ? kb[j * a.Dk + d] : 0.0f;
            Vs[jj][d] = (j < a.Tk && d < a.Dv) ? vb[j * a.Dv + d] : 0.0f;
        }
        __syncthreads();
        const bool plain = mask.all_allowed(q_lo, k0 + BCT - 1);

        for (int s0 = 0; s0 < BCT; s0 += F32_SUB) {
            // pass 2: SUB scores of this row (dot over the TPR partners' slices)
            float s[F32_SUB];
            float mx = -INFINITY;
#pragma unroll
            for (int jj = 0; jj < F32_SUB; ++jj) {
                const float* kr = &Ks[s0 + jj][d0];
                float dot = 0.0f;
#pragma unroll
                for (int c = 0; c < CH; ++c) dot += qr[c] * kr[c];
#pragma unroll
                for (int off = 1; off < TPR; off <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
                const int64_t j = k0 + s0 + jj;
                float x;
                if (plain) x = dot * a.scale;
                else if (j >= a.Tk) x = -INFINITY;  // no such key
                else x = masked_score(a, mask, dot, ic, j);
                s[jj] = x;
                mx = max_nan(mx, x);
            }
            // pass 3: online softmax update for these SUB keys
            const float m_new = max_nan(m, mx);
            const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // all -inf so far: nothing to scale
            const float alpha = expf(m - m_use);
            l *= alpha;
#pragma unroll
            for (int c = 0; c < CH; ++c) acc[c] *= alpha;
#pragma unroll
            for (int jj = 0; jj < F32_SUB; ++jj) {
                const float p = expf(s[jj] - m_use);
                l += p;
                float pd = p;
                if (dropping) {
                    const int64_t j = k0 + s0 + jj;
                    const uint64_t flat = static_cast<uint64_t>((bh * a.Tq + ic) * a.Tk + j);
                    pd = dropout_drops_dev(a.seed, flat, a.dropout) ? 0.0f : p * a.keep_scale;
                }
                const float* vr = &Vs[s0 + jj][d0];
#pragma unroll
                for (int c = 0; c < CH; ++c) acc[c] += pd * vr[c];
            }
            m = m_new;
        }
    }
    // pass 4: normalise and write this thread's slice of the output row
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    if (live) {
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            const int64_t d = d0 + c;
            if (d < a.Dv) out[(bh * a.Tq + i) * a.Dv + d] = acc[c] * inv;
        }
    }
}

int flash_f32_max_d() { return 256; }

template <int CH, int TPR>
static void launch_f32(const float* q, const float* k, const float* v, float* out, const AttnArgs& a, cudaStream_t st) {
    constexpr int ROWS = F32_THREADS / TPR;
    const dim3 grid(static_cast<unsigned>((a.Tq + ROWS - 1) / ROWS), static_cast<unsigned>(a.B * a.H));
    flash_f32_kernel<CH, TPR><<<grid, F32_THREADS, 0, st>>>(q, k, v, out, a);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

void launch_flash_f32(const float* q, const float* k, const float* v, float* out, const AttnArgs& a,
                      cudaStream_t st) {
    // one instantiation per head-size class; D = CH·TPR is the padded head size
    const int64_t d = a.Dk > a.Dv ? a.Dk : a.Dv;
    if (d <= 32) launch_f32<32, 1>(q, k, v, out, a, st);
    else if (d <= 64) launch_f32<64, 1>(q, k, v, out, a, st);
    else if (d <= 128) launch_f32<64, 2>(q, k, v, out, a, st);
    else launch_f32<64, 4>(q, k, v, out, a, st);
}

}  // namespace attn::cuda_detail
