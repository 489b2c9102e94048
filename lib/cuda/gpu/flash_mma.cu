// lib/cuda/gpu/flash_mma.cu: FlashAttention's forward on tensor cores (fp16 or bf16 in,
// float32 accumulation, float32 softmax state and output).
//
// Reason to exist: attention at matrix-unit speed. Both products run as
// mma.sync.m16n8k16 (sm_80 and later), the FlashAttention-2 way:
//   * a block of 4 warps owns 64 query rows of one (b, h); each warp owns 16 rows
//     and keeps its Q fragments in registers for the whole key loop;
//   * K and V tiles of 64 keys are staged row-major through shared memory with
//     16-byte cp.async copies, double-buffered so the next tile streams in while
//     this one is computed; rows padded by 16 bytes so the ldmatrix reads of 8 rows
//     hit 32 different banks; ldmatrix hands out K's B fragments directly and V's
//     through its transposing form (.trans), four 8x8 matrices per instruction;
//   * S = Q Kᵀ lands in accumulator registers whose layout is exactly the A operand
//     layout of the next mma, so P = exp(S - m) goes from registers (rounded to
//     16 bits) straight into O += P V, without touching shared memory;
//   * the online softmax keeps (m, l) per row in registers; fully masked tiles are
//     skipped (causal, key padding) when the fill is -inf.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16", g = lane / 4, t = lane % 4):
//   A 16x16 row-major, 4 regs of 2 halves: {(g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)}
//   B 16x8 "col":   2 regs:                {(k = 2t..2t+1, n = g), (k = 2t+8..2t+9, n = g)}
//   C 16x8 float:   4 floats:              (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common.cuh"

namespace attn::cuda_detail {

using u16 = unsigned short;  // raw 16-bit storage of an fp16 or bf16 value

// query rows per block: 16 per warp; WARPS (4 or 8) is a template parameter of the kernel
constexpr int MMA_BC = 64;  // keys per tile
constexpr float LOG2E = 1.4426950408889634f;

struct F16Tag {};
struct Bf16Tag {};

// Two floats -> one register of two 16-bit values, the first in the low half.
__device__ inline uint32_t pack2(F16Tag, float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &h, 4);
    return r;
}
__device__ inline uint32_t pack2(Bf16Tag, float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &h, 4);
    return r;
}

// d (16x8, float) += a (16x16) · b (16x8)
__device__ inline void mma16816(F16Tag, float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void mma16816(Bf16Tag, float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ inline uint32_t ld32(const u16* p) { return *reinterpret_cast<const uint32_t*>(p); }

// ldmatrix: four 8x8 16-bit matrices from shared memory; lane l gives the address of
// row l % 8 of matrix l / 8. Plain: lane l receives (row l/4, cols 2(l%4), +1) of each
// matrix, the A/B fragment order. .trans: it receives (rows 2(l%4), +1; col l/4), i.e.
// the fragment of the transposed matrix.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const u16* p) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const u16* p) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// Rows [r0, r0 + ROWS) of a row-major (n, d) matrix into dst (ROWS, LD), columns
// [0, D) with zeros past n rows and d columns. vec: d % 8 == 0, so 16-byte chunks.
template <int ROWS, int D, int LD, int NT>
__device__ inline void stage_rows(u16* dst, const u16* src, int64_t r0, int64_t n, int64_t d, bool vec) {
    // NT threads share the copy
    if (vec) {
        constexpr int CPR = D / 8;  // 16-byte chunks per row
        for (int e = threadIdx.x; e < ROWS * CPR; e += NT) {
            const int r = e / CPR, c = (e % CPR) * 8;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (r0 + r < n && c < d) val = *reinterpret_cast<const uint4*>(src + (r0 + r) * d + c);
            *reinterpret_cast<uint4*>(dst + r * LD + c) = val;
        }
    } else {
        for (int e = threadIdx.x; e < ROWS * D; e += NT) {
            const int r = e / D, c = e % D;
            dst[r * LD + c] = (r0 + r < n && c < d) ? src[(r0 + r) * d + c] : u16(0);
        }
    }
}

// 16 bytes global -> shared without passing through registers (sm_80+); zeros when !pred.
__device__ inline void cp_async16(u16* dst, const u16* src, bool pred) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(pred ? 16 : 0));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// stage_rows that, when vec, only starts the copies (cp.async): the caller commits,
// waits and synchronises. Without vec it falls back to the synchronous copy.
template <int ROWS, int D, int LD, int NT>
__device__ inline void stage_rows_async(u16* dst, const u16* src, int64_t r0, int64_t n, int64_t d, bool vec) {
    if (!vec) return stage_rows<ROWS, D, LD, NT>(dst, src, r0, n, d, false);
    constexpr int CPR = D / 8;
    for (int e = threadIdx.x; e < ROWS * CPR; e += NT) {
        const int r = e / CPR, c = (e % CPR) * 8;
        const bool in = r0 + r < n && c < d;
        cp_async16(dst + r * LD + c, in ? src + (r0 + r) * d + c : src, in);
    }
}

// Shared memory of one block: K and V tiles, two of each (double buffering).
template <int D>
constexpr int mma_smem_bytes() { return 4 * MMA_BC * (D + 8) * 2; }

constexpr int NT_S = MMA_BC / 8;  // 8-key column tiles of S

// pass 0: Q tile (BR rows from q_lo) -> shared memory -> this warp's A fragments, kept in registers
template <int D, int WARPS>
__device__ __forceinline__ void load_q_fragments(uint32_t (&qa)[D / 16][4], u16* smem, const u16* q, const AttnArgs& a,
                                                 int64_t bh, int64_t q_lo, bool vec_qk) {
    constexpr int LDK = D + 8, KS = D / 16, BR = 16 * WARPS, NT = 32 * WARPS;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    stage_rows<BR, D, LDK, NT>(smem, q + bh * a.Tq * a.Dk, q_lo, a.Tq, a.Dk, vec_qk);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        const u16* p = smem + (warp * 16 + g) * LDK + ks * 16 + 2 * t;
        qa[ks][0] = ld32(p);
        qa[ks][1] = ld32(p + 8 * LDK);
        qa[ks][2] = ld32(p + 8);
        qa[ks][3] = ld32(p + 8 * LDK + 8);
    }
}

// pass 2: S (16 x 64 per warp) = Q Kᵀ, K the tile Ks in shared memory
template <class Tag, int D>
__device__ __forceinline__ void scores_qk(Tag tag, float (&s)[NT_S][4], const uint32_t (&qa)[D / 16][4],
                                          const u16* Ks) {
    constexpr int LDK = D + 8, KS = D / 16;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int nt = 0; nt < NT_S; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int nt = 0; nt < NT_S; nt += 2) {
            // matrices: keys of column tiles nt, nt+1 (rows) x dims ks*16 + {0..7, 8..15}
            uint32_t kb[4];
            const int mi = lane / 8, r = lane % 8;
            ldmatrix_x4(kb, Ks + ((nt + (mi >> 1)) * 8 + r) * LDK + ks * 16 + (mi & 1) * 8);
            mma16816(tag, s[nt], qa[ks], kb[0], kb[1]);
            mma16816(tag, s[nt + 1], qa[ks], kb[2], kb[3]);
        }
}

// pass 3: scale, additive mask, masked_fill (whole tiles inside the mask skip this), then
// log2(e) times that: from here on S, the running max and the exponents are base 2, so
// exp(s - max) is exp2f(s2 - max2), and a score equal to the max gives exactly 1. (The
// form exp2f(s * LOG2E - max * LOG2E) compiles to fma(s, LOG2E, -round(max * LOG2E)),
// which at |s| = 1e9, a finite fill, is 2^(+-64) instead of 1: fp16 overflow, NaN.)
__device__ __forceinline__ void scale_and_mask(float (&s)[NT_S][4], const AttnArgs& a, const MaskRow& mask,
                                               int64_t q_lo, int64_t k0, int64_t i0c, int64_t i1c, float scale2) {
    const int t = threadIdx.x % 32 % 4;
    const bool plain = mask.all_allowed(q_lo, k0 + MMA_BC - 1);
#pragma unroll
    for (int nt = 0; nt < NT_S; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (plain) {
                s[nt][e] *= scale2;
            } else {
                const int64_t j = k0 + nt * 8 + 2 * t + (e & 1);
                s[nt][e] = j >= a.Tk ? -INFINITY : masked_score(a, mask, s[nt][e], e < 2 ? i0c : i1c, j) * LOG2E;
            }
        }
}

// The online softmax state of this thread's two query rows: running max (base 2) and
// running sums (this thread's columns only).
struct RowState {
    float m0 = -INFINITY, m1 = -INFINITY;
    float l0 = 0.0f, l1 = 0.0f;
};

// pass 4: online softmax; the 4 threads of a quad share rows, so max over the quad. S becomes
// P (dropped where dropout drops it), O and the sums are rescaled to the new max.
template <int D>
__device__ __forceinline__ void online_softmax(float (&s)[NT_S][4], float (&o)[D / 8][4], RowState& st,
                                               const AttnArgs& a, int64_t bh, int64_t k0, int64_t i0c, int64_t i1c,
                                               bool dropping) {
    constexpr int NT_O = D / 8;
    const int t = threadIdx.x % 32 % 4;
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < NT_S; ++nt) {
        mx0 = max_nan(mx0, max_nan(s[nt][0], s[nt][1]));
        mx1 = max_nan(mx1, max_nan(s[nt][2], s[nt][3]));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        mx0 = max_nan(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
        mx1 = max_nan(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float mn0 = max_nan(st.m0, mx0), mn1 = max_nan(st.m1, mx1);
    const float u0 = mn0 == -INFINITY ? 0.0f : mn0;  // all -inf so far: nothing to rescale
    const float u1 = mn1 == -INFINITY ? 0.0f : mn1;
    const float alpha0 = exp2f(st.m0 - u0), alpha1 = exp2f(st.m1 - u1);
    st.m0 = mn0;
    st.m1 = mn1;
    st.l0 *= alpha0;
    st.l1 *= alpha1;
#pragma unroll
    for (int nt = 0; nt < NT_O; ++nt) {
        o[nt][0] *= alpha0;
        o[nt][1] *= alpha0;
        o[nt][2] *= alpha1;
        o[nt][3] *= alpha1;
    }
#pragma unroll
    for (int nt = 0; nt < NT_S; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float p = exp2f(s[nt][e] - (e < 2 ? u0 : u1));
            if (e < 2) st.l0 += p;
            else st.l1 += p;
            float pd = p;
            if (dropping) {
                const int64_t j = k0 + nt * 8 + 2 * t + (e & 1);
                const int64_t row = e < 2 ? i0c : i1c;
                const uint64_t flat = static_cast<uint64_t>((bh * a.Tq + row) * a.Tk + j);
                pd = dropout_drops_dev(a.seed, flat, a.dropout) ? 0.0f : p * a.keep_scale;
            }
            s[nt][e] = pd;
        }
}

// pass 5: O += P V, P straight from the S registers (C layout == A layout), V the tile Vs
template <class Tag, int D>
__device__ __forceinline__ void accumulate_pv(Tag tag, float (&o)[D / 8][4], const float (&s)[NT_S][4],
                                              const u16* Vs) {
    constexpr int LDK = D + 8, NT_O = D / 8;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int kk = 0; kk < MMA_BC / 16; ++kk) {
        const uint32_t pa[4] = {pack2(tag, s[2 * kk][0], s[2 * kk][1]), pack2(tag, s[2 * kk][2], s[2 * kk][3]),
                                pack2(tag, s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                pack2(tag, s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int nt = 0; nt < NT_O; nt += 2) {
            // matrices: keys kk*16 + {0..7, 8..15} (rows) x dims of column tiles nt, nt+1, transposed
            uint32_t vb[4];
            const int mi = lane / 8, r = lane % 8;
            ldmatrix_x4_trans(vb, Vs + (kk * 16 + (mi & 1) * 8 + r) * LDK + (nt + (mi >> 1)) * 8);
            mma16816(tag, o[nt], pa, vb[0], vb[1]);
            mma16816(tag, o[nt + 1], pa, vb[2], vb[3]);
        }
    }
}

// pass 6: the quad's partial sums -> row sums; normalise and write rows i0, i1 (those below Tq)
template <int D>
__device__ __forceinline__ void write_rows(float* out, const AttnArgs& a, int64_t bh, int64_t i0, int64_t i1,
                                           const float (&o)[D / 8][4], float l0, float l1) {
    constexpr int NT_O = D / 8;
    const int t = threadIdx.x % 32 % 4;
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT_O; ++nt) {
        const int64_t c = nt * 8 + 2 * t;
        if (i0 < a.Tq) {
            float* r = out + (bh * a.Tq + i0) * a.Dv;
            if (c < a.Dv) r[c] = o[nt][0] * inv0;
            if (c + 1 < a.Dv) r[c + 1] = o[nt][1] * inv0;
        }
        if (i1 < a.Tq) {
            float* r = out + (bh * a.Tq + i1) * a.Dv;
            if (c < a.Dv) r[c] = o[nt][2] * inv1;
            if (c + 1 < a.Dv) r[c + 1] = o[nt][3] * inv1;
        }
    }
}

template <class Tag, int D, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    flash_mma_kernel(const u16* __restrict__ q, const u16* __restrict__ k, const u16* __restrict__ v,
                     float* __restrict__ out, AttnArgs a, bool vec_qk, bool vec_v) {
    // q (BH, Tq, Dk), k (BH, Tk, Dk), v (BH, Tk, Dv) 16-bit -> out (BH, Tq, Dv) float32; D >= Dk, Dv
    constexpr int LDK = D + 8;       // row stride of the Q, K and V tiles, in halves (16-byte pad)
    constexpr int NT_O = D / 8;      // 8-wide column tiles of O
    constexpr int KS = D / 16;       // 16-deep steps over the head dimension
    constexpr int TILE = MMA_BC * LDK;
    constexpr int BR = 16 * WARPS;   // query rows of this block
    constexpr int NT = 32 * WARPS;   // threads
    extern __shared__ __align__(16) u16 smem[];
    // K buffers at smem + {0, 1}·TILE, V at + {2, 3}·TILE; before the loop the Q tile (BR rows) sits at smem
    const auto Kbuf = [&](int i) { return smem + i * TILE; };
    const auto Vbuf = [&](int i) { return smem + (2 + i) * TILE; };
    static_assert(BR <= 4 * MMA_BC, "the Q tile must fit in the K/V buffers");

    const Tag tag{};
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4;
    const int64_t bh = blockIdx.y;
    const MaskRow& mask = a.mask[bh / a.H];
    const int64_t q_lo = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BR;  // longest blocks first
    const int64_t i0 = q_lo + warp * 16 + g, i1 = i0 + 8;  // this thread's two query rows
    const int64_t i0c = i0 < a.Tq ? i0 : a.Tq - 1, i1c = i1 < a.Tq ? i1 : a.Tq - 1;

    uint32_t qa[KS][4];
    load_q_fragments<D, WARPS>(qa, smem, q, a, bh, q_lo, vec_qk);

    float o[NT_O][4];
#pragma unroll
    for (int nt = 0; nt < NT_O; ++nt) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
    RowState st;  // rows i0, i1
    const float scale2 = a.scale * LOG2E;

    const int64_t q_hi = q_lo + BR - 1 < a.Tq - 1 ? q_lo + BR - 1 : a.Tq - 1;
    const int64_t k_end = key_end(a, mask, q_hi);
    const bool dropping = a.dropout > 0.0f;

    const u16* const kg = k + bh * a.Tk * a.Dk;
    const u16* const vg = v + bh * a.Tk * a.Dv;
    const int64_t n_tiles = (k_end + MMA_BC - 1) / MMA_BC;

    // pass 1 (pipelined): tile it+1 is in flight (cp.async) while tile it is computed
    __syncthreads();  // every warp has its Q fragments: the buffers may be overwritten
    if (n_tiles > 0) {
        stage_rows_async<MMA_BC, D, LDK, NT>(Kbuf(0), kg, 0, a.Tk, a.Dk, vec_qk);
        stage_rows_async<MMA_BC, D, LDK, NT>(Vbuf(0), vg, 0, a.Tk, a.Dv, vec_v);
    }
    cp_async_commit();
    for (int64_t it = 0; it < n_tiles; ++it) {
        const int64_t k0 = it * MMA_BC;
        const int cur = static_cast<int>(it & 1);
        if (it + 1 < n_tiles) {
            // buffer cur^1 was last read in iteration it-1, which ended with a barrier
            stage_rows_async<MMA_BC, D, LDK, NT>(Kbuf(cur ^ 1), kg, k0 + MMA_BC, a.Tk, a.Dk, vec_qk);
            stage_rows_async<MMA_BC, D, LDK, NT>(Vbuf(cur ^ 1), vg, k0 + MMA_BC, a.Tk, a.Dv, vec_v);
        }
        cp_async_commit();
        cp_async_wait<1>();  // every group but the newest is done: tile it has landed
        __syncthreads();     // ... for all threads' copies
        float s[NT_S][4];
        scores_qk<Tag, D>(tag, s, qa, Kbuf(cur));
        scale_and_mask(s, a, mask, q_lo, k0, i0c, i1c, scale2);
        online_softmax<D>(s, o, st, a, bh, k0, i0c, i1c, dropping);
        accumulate_pv<Tag, D>(tag, o, s, Vbuf(cur));
        __syncthreads();  // everyone is done with buffer cur before it is refilled
    }
    write_rows<D>(out, a, bh, i0, i1, o, st.l0, st.l1);
}

int flash_mma_max_d() { return 128; }

// ATTN_CUDA_MMA_WARPS=8 starts with 8 warps (for timing both with attn bench); anything else is 4
static int initial_mma_warps() {
    const char* e = std::getenv("ATTN_CUDA_MMA_WARPS");
    return e != nullptr && std::strcmp(e, "8") == 0 ? 8 : 4;
}
static std::atomic<int> g_mma_warps{initial_mma_warps()};
void set_flash_mma_warps(int warps) { g_mma_warps = warps == 8 ? 8 : 4; }

template <class Tag, int D, int WARPS>
static void launch_mma(const void* q, const void* k, const void* v, float* out, const AttnArgs& a, cudaStream_t st) {
    constexpr int BR = 16 * WARPS;
    const dim3 grid(static_cast<unsigned>((a.Tq + BR - 1) / BR), static_cast<unsigned>(a.B * a.H));
    const bool vec_qk = a.Dk > 0 && a.Dk % 8 == 0, vec_v = a.Dv > 0 && a.Dv % 8 == 0;  // 16-byte rows
    constexpr int smem = mma_smem_bytes<D>();  // 68 KiB at D = 128: above the 48 KiB default
    ATTN_CUDA_CHECK(
        cudaFuncSetAttribute(flash_mma_kernel<Tag, D, WARPS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    flash_mma_kernel<Tag, D, WARPS><<<grid, WARPS * 32, smem, st>>>(
        static_cast<const u16*>(q), static_cast<const u16*>(k), static_cast<const u16*>(v), out, a, vec_qk, vec_v);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

template <class Tag, int WARPS>
static void launch_mma_d(const void* q, const void* k, const void* v, float* out, const AttnArgs& a, cudaStream_t st) {
    const int64_t d = a.Dk > a.Dv ? a.Dk : a.Dv;
    if (d <= 32) launch_mma<Tag, 32, WARPS>(q, k, v, out, a, st);
    else if (d <= 64) launch_mma<Tag, 64, WARPS>(q, k, v, out, a, st);
    else launch_mma<Tag, 128, WARPS>(q, k, v, out, a, st);
}

void launch_flash_mma(Half h, const void* q, const void* k, const void* v, float* out, const AttnArgs& a,
                      cudaStream_t st) {
    // 4 warps (64 query rows) by default; 8 warps (128 rows) halve the K/V traffic per row
    // at the price of one block per multiprocessor: which wins is measured, not assumed
    const bool w8 = g_mma_warps == 8;
    if (h == Half::F16)
        w8 ? launch_mma_d<F16Tag, 8>(q, k, v, out, a, st) : launch_mma_d<F16Tag, 4>(q, k, v, out, a, st);
    else w8 ? launch_mma_d<Bf16Tag, 8>(q, k, v, out, a, st) : launch_mma_d<Bf16Tag, 4>(q, k, v, out, a, st);
}

// float32 -> 16 bits, one element per thread
template <class Tag>
__global__ void to_half_kernel(const float* __restrict__ src, u16* __restrict__ dst, int64_t n) {
    const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    const uint32_t two = pack2(Tag{}, src[idx], 0.0f);
    dst[idx] = static_cast<u16>(two & 0xffffu);
}

void launch_to_half(Half h, const float* src, void* dst, int64_t n, cudaStream_t st) {
    if (n == 0) return;
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (h == Half::F16) to_half_kernel<F16Tag><<<blocks, 256, 0, st>>>(src, static_cast<u16*>(dst), n);
    else to_half_kernel<Bf16Tag><<<blocks, 256, 0, st>>>(src, static_cast<u16*>(dst), n);
    ATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace attn::cuda_detail
