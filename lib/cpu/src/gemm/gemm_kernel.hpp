// lib/cpu/src/gemm/gemm_kernel.hpp: private. The float32 GEMMs of attn/cpu/gemm.hpp, written once
// over a SIMD trait T and included by one .cpp per instruction set (gemm_avx512.cpp,
// gemm_avx2.cpp, gemm_neon.cpp) inside its target region, after <immintrin.h> and before its
// traits header (which builds on F32Strip below). Every
// name is in an anonymous namespace: each including file gets its own copy, compiled for its
// own instructions.
//
// T (gemm_avx512_traits.hpp, gemm_avx2_traits.hpp; built on the flash kernels' traits):
//   V, W              a vector of W floats;  zero, load, store, set1, fmadd
//   M, mask(n)        a lane mask of the first n lanes (any int n: <= 0 none, >= W all)
//   load_m, store_m   masked load (zeros elsewhere) and store
//   prefetch          a cache line on its way to L1
//   E, load_w, bcast, madd   (the strip kernel) the element of x and of a strip row (float,
//                     or a uint32_t pair of bf16), a vector of a strip row, one x element in
//                     every lane, and acc + the lane's product(s) in float32
//
// Two kernels, both "every element of C is init + term 0 + term 1 + ... in ascending k,
// one fused multiply-add per term, in whichever register tile or thread computes it", so
// the result depends neither on the split of the work nor on the thread count, nor on the
// instruction set: the AVX2 and AVX-512 kernels give the same bits.
//
// 1. gemm_run (gemm::StridedArgs, the training ops): A read through two strides, B and C
//    row-major. A register tile of R rows x NV vectors of C stays in registers over the whole
//    k loop; column blocks of NV vectors, row tiles inside, so B's block is read from L1 by
//    every row tile. With A read along its rows, rows go in L1-sized blocks outside the column
//    blocks and B's column blocks are copied side by side first (gemm_run says why).
// 2. strips_run (gemm::StripsFn and the bf16 strips, the encoder): B packed in strips of 32
//    columns (gemm::kStrip); a tile covers R rows x NV vectors of one strip (NV W <= 32), the
//    strip outside, its vector groups next, then passes of kStripKBlock terms, the row tiles
//    inside. Its operands are T::E: float, or pairs of bf16 (gemm_bf16.cpp: each madd adds two
//    products).
#pragma once

#include <algorithm>
#include <cstdint>

#include "attn/cpu/gemm.hpp"
#include "gemm_scratch.hpp"
#include "gemm_variants.hpp"

namespace attn::gemm {
namespace {

// The strip kernel's operands in float32, as every float32 traits struct (AVX2, AVX-512, NEON)
// gives them: `struct Avx2 : F32Strip<flash_detail::Avx2> { ... }`. The bf16 traits
// (gemm_bf16*.cpp) hide these with their pairs.
template <class B>
struct F32Strip : B {
    using V = typename B::V;
    using E = float;
    static V load_w(const float* p) { return B::load(p); }
    static V bcast(float x) { return B::set1(x); }
    static V madd(V acc, V a, V w) { return B::fmadd(a, w, acc); }
};

// Lane masks for families with no masked load or store (NEON, generic): a mask is the lane
// count, and a partial vector goes through a W-float buffer (only at a block's right edge,
// once per tile and row of B, so the full-vector loop is untouched).
template <class B>
struct BufferMasks : B {
    using V = typename B::V;
    using M = int;                                                           // the first M lanes
    static M mask(int n) { return n <= 0 ? 0 : n >= B::W ? B::W : n; }      // any int n: clamped to [0, W]
    static V load_m(const float* p, M m) {                                   // zeros past the first m lanes
        if (m == B::W) return B::load(p);
        float t[B::W] = {};
        __builtin_memcpy(t, p, static_cast<size_t>(m) * sizeof(float));
        return B::load(t);
    }
    static void store_m(float* p, V x, M m) {
        if (m == B::W) return B::store(p, x);
        float t[B::W];
        B::store(t, x);
        __builtin_memcpy(p, t, static_cast<size_t>(m) * sizeof(float));
    }
    static void prefetch(const float* p) { __builtin_prefetch(p, 0, 3); }
};

// The strip operands as pairs of bf16 in 32-bit lanes (attn/cpu/gemm.hpp), for families with
// no bf16 dot product: each pair widened to two float vectors when used (the even bf16:
// shifted left 16; the odd one: the low half masked off), its two products two float32 FMAs.
// A product of two bf16 values is exact in float32, so the sums are a bf16 dot product's with
// float32 accumulation. B: a float32 traits struct whose V is a GCC vector of floats (the
// x86 and NEON types are), so the widening is written once with vector casts (same size: the
// bits kept) and compiles to each target's shifts and ands.
template <class B>
struct WidenedPairs : B {
    using V = typename B::V;
    using E = uint32_t;
    typedef uint32_t U __attribute__((vector_size(sizeof(V))));
    struct P {
        V even, odd;
    };
    static P widen(U u) { return {(V)(u << 16), (V)(u & 0xffff0000u)}; }
    static P load_w(const uint32_t* w) {
        U u;
        __builtin_memcpy(&u, w, sizeof u);
        return widen(u);
    }
    static P bcast(uint32_t x) { return widen(U{} + x); }
    static V madd(V acc, P a, P w) { return B::fmadd(a.odd, w.odd, B::fmadd(a.even, w.even, acc)); }
};

// ---------------------------------------------------------------- 1. strided A

constexpr int64_t kPrefetchRows = 32;  // how far ahead a prefetching tile asks for B's rows
constexpr int64_t kRowBlockBytes = 8192;  // A's rows per row block (gemm_run), in bytes

template <class T, int R, int NV, bool MASK, bool PF>
void gemm_tile(const StridedArgs& g, int64_t i0, int64_t j0, int tail, const float* b, int64_t ldb) {
    using V = typename T::V;
    constexpr int W = T::W;
    constexpr int NF = MASK ? NV - 1 : NV;  // full vectors; the last one is masked when MASK
    const typename T::M km = T::mask(tail);
    const int64_t K = g.K, sai = g.sai, sak = g.sak, ldc = g.ldc;
    V acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* c = g.C + (i0 + r) * ldc + j0;
        const float* init = g.accumulate ? c : g.bias ? g.bias + j0 : nullptr;
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) acc[r][v] = init ? T::load(init + v * W) : T::zero();
        if constexpr (MASK) acc[r][NV - 1] = init ? T::load_m(init + NF * W, km) : T::zero();
    }
    const float* a = g.A + i0 * sai;
    for (int64_t k = 0; k < K; ++k, a += sak, b += ldb) {
        if constexpr (PF) {  // B's row kPrefetchRows ahead, on its way to L1 (PF: B is cold memory)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) T::prefetch(b + kPrefetchRows * ldb + v * W);
        }
        V bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) bv[v] = T::load(b + v * W);
        if constexpr (MASK) bv[NV - 1] = T::load_m(b + NF * W, km);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const V av = T::set1(a[r * sai]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = T::fmadd(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* c = g.C + (i0 + r) * ldc + j0;
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) T::store(c + v * W, acc[r][v]);
        if constexpr (MASK) T::store_m(c + NF * W, acc[r][NV - 1], km);
    }
}

template <class T, int R, int NV, bool PF>
void gemm_rows(const StridedArgs& g, int64_t i0, int64_t j0, int nvec, int tail, const float* b, int64_t ldb) {
    const bool m = tail != T::W;
    // nvec in [1, NV]: one instantiation per vector count, masked or not
    if constexpr (NV >= 1)
        if (nvec == 1)
            return m ? gemm_tile<T, R, 1, true, PF>(g, i0, j0, tail, b, ldb)
                     : gemm_tile<T, R, 1, false, PF>(g, i0, j0, tail, b, ldb);
    if constexpr (NV >= 2)
        if (nvec == 2)
            return m ? gemm_tile<T, R, 2, true, PF>(g, i0, j0, tail, b, ldb)
                     : gemm_tile<T, R, 2, false, PF>(g, i0, j0, tail, b, ldb);
    if constexpr (NV >= 3)
        if (nvec == 3)
            return m ? gemm_tile<T, R, 3, true, PF>(g, i0, j0, tail, b, ldb)
                     : gemm_tile<T, R, 3, false, PF>(g, i0, j0, tail, b, ldb);
    if constexpr (NV >= 4)
        if (nvec == 4)
            return m ? gemm_tile<T, R, 4, true, PF>(g, i0, j0, tail, b, ldb)
                     : gemm_tile<T, R, 4, false, PF>(g, i0, j0, tail, b, ldb);
}

template <class T, int R, int NV>
void gemm_tail_rows(const StridedArgs& g, int64_t i0, int rows, int64_t j0, int nvec, int tail, const float* b,
                    int64_t ldb) {
    if constexpr (R > 1) {
        if (rows == R - 1) return gemm_rows<T, R - 1, NV, false>(g, i0, j0, nvec, tail, b, ldb);
        return gemm_tail_rows<T, R - 1, NV>(g, i0, rows, j0, nvec, tail, b, ldb);
    }
}

// Rows [ib, ie) of one column block of nvec vectors (nvec <= NV; fewer in the last block when
// BW does not divide Nc). A narrower block takes taller tiles, R NV / nvec rows, so it keeps the
// full tile's number of accumulators (a 4 x 3 AVX2 tile: 6 x 2 for a 16-column tail, which
// 64-column products always have) instead of idling FMA slots on a short tile. TALL false
// keeps R rows (NEON: its tiles also hold one register per row of A, and R NV / nvec rows would
// fill all 32 registers; untimed there, so left as it was).
template <class T, int R, int NV, int NVEC, bool TALL>
void block_rows(const StridedArgs& g, int64_t ib, int64_t ie, int64_t j0, int nvec, int tail, const float* b,
                int64_t ldb, bool pf) {
    if constexpr (NVEC > 1) {
        if (nvec < NVEC) return block_rows<T, R, NV, NVEC - 1, TALL>(g, ib, ie, j0, nvec, tail, b, ldb, pf);
    }
    constexpr int RT = TALL && NVEC >= 2 ? R * NV / NVEC : R;
    if constexpr (RT != R) {
        // rows that R divides and RT does not (a weight gradient's 32 output rows: 5 x 6 + 2)
        // keep R-row tiles rather than end on a tile of a few rows
        if ((ie - ib) % RT != 0 && (ie - ib) % R == 0)
            return block_rows<T, R, NV, NVEC, false>(g, ib, ie, j0, nvec, tail, b, ldb, pf);
    }
    int64_t i0 = ib;
    if (pf && i0 + RT <= ie) {
        gemm_rows<T, RT, NVEC, true>(g, i0, j0, nvec, tail, b, ldb);
        i0 += RT;
    }
    for (; i0 + RT <= ie; i0 += RT) gemm_rows<T, RT, NVEC, false>(g, i0, j0, nvec, tail, b, ldb);
    if (i0 < ie) gemm_tail_rows<T, RT, NVEC>(g, i0, static_cast<int>(ie - i0), j0, nvec, tail, b, ldb);
}

// B's column blocks copied side by side, each (K, BW) contiguous (the last one's columns past
// Nc left as they are: no tile reads them), into this thread's buffer (detail::thread_scratch).
template <int64_t BW>
const float* pack_b(const StridedArgs& g) {
    const int64_t nb = (g.Nc + BW - 1) / BW;
    float* buf = detail::thread_scratch(nb * g.K * BW);
    for (int64_t jb = 0; jb < nb; ++jb) {
        const int64_t j0 = jb * BW, nc = g.Nc - j0 < BW ? g.Nc - j0 : BW;
        float* dst = buf + jb * g.K * BW;
        for (int64_t k = 0; k < g.K; ++k)
            __builtin_memcpy(dst + k * BW, g.B + k * g.ldb + j0, static_cast<size_t>(nc) * sizeof(float));
    }
    return buf;
}

// Column blocks of NV vectors (BW columns), and within each the row tiles of R rows.
// When A is read along its rows (sak = 1: x . W^T and dout . W, whose B is a weight):
//  - rows go in blocks of MB, whose A rows (MB x K floats) fit in about 8 KiB next to B's
//    column block, and each row block sweeps every column block: with all M rows at once
//    (256 of them, K = 64: 64 KiB) every column block streamed A from L2 again;
//  - B's column blocks are first copied into one contiguous buffer (when there is more than
//    one): a block read in place has rows ldb floats apart, and at 256 columns (1 KiB) its
//    rows fall into a few of the L1's sets, too few to hold them.
// Otherwise (a weight gradient: A = G^T, B the saved activations, cold): all rows at once,
// B read in place. Unless B was copied, the first row tile of each column block prefetches
// B's rows when g.prefetch_b; the others then find them in L1.
// Neither changes a sum: each element is still one tile's FMAs over k = 0..K-1 in order.
template <class T, int R, int NV, bool TALL = true>
void gemm_run(const StridedArgs& g) {
    constexpr int64_t BW = int64_t{NV} * T::W;
    const bool rows_along = g.sak == 1;
    // MB a multiple of R NV, so the taller tiles of a narrow block (block_rows) divide it too
    constexpr int64_t RM = int64_t{R} * NV;
    const int64_t MB =
        rows_along ? std::max<int64_t>(RM, kRowBlockBytes / (4 * std::max<int64_t>(g.K, 1)) / RM * RM) : g.M;
    const bool packed = rows_along && g.Nc > BW && g.M > MB;
    const float* pb = packed ? pack_b<BW>(g) : nullptr;
    for (int64_t ib = 0; ib < g.M; ib += MB) {
        const int64_t ie = std::min(g.M, ib + MB);
        for (int64_t j0 = 0; j0 < g.Nc; j0 += BW) {
            const int64_t nc = g.Nc - j0 < BW ? g.Nc - j0 : BW;
            const int nvec = static_cast<int>((nc + T::W - 1) / T::W);
            const int tail = static_cast<int>(nc - int64_t{nvec - 1} * T::W);
            const float* b = packed ? pb + j0 * g.K : g.B + j0;
            const int64_t ldb = packed ? BW : g.ldb;
            block_rows<T, R, NV, NV, TALL>(g, ib, ie, j0, nvec, tail, b, ldb, g.prefetch_b && !packed && ib == 0);
        }
    }
}

// ---------------------------------------------------------------- 2. packed strips

// R rows x NV vectors of out, from column j0 on (ncols of them exist, ncols <= NV W, maybe
// fewer at the right edge); w: the strip's rows, from the tile's first column, kStrip apart;
// x rows of kn elements.
// Weights are zero-padded to whole strips, so the loads are always whole vectors; only the
// bias load and the stores are masked.
// Terms k0 .. k1 - 1 only (k0 > 0: onto the partial sums already in out, which a tile over the
// earlier terms stored there: float32 in memory as in the register, so the same bits).
template <class T, int R, int NV>
void strip_tile(float* out, const typename T::E* x, const typename T::E* w, const float* b, int64_t kn, int64_t n_out,
                int64_t i0, int64_t j0, int ncols, int64_t k0, int64_t k1) {
    using V = typename T::V;
    using WV = decltype(T::load_w(w));
    constexpr int W = T::W;
    typename T::M m[NV];
    V acc[R][NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        m[v] = T::mask(ncols - v * W);
        if (k0 > 0) {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) acc[r][v] = T::load_m(out + (i0 + r) * n_out + j0 + v * W, m[v]);
            continue;
        }
        const V bv = b != nullptr ? T::load_m(b + j0 + v * W, m[v]) : T::zero();
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][v] = bv;
    }
    const typename T::E* xr = x + i0 * kn;
    w += k0 * kStrip;
    for (int64_t k = k0; k < k1; ++k, w += kStrip) {
        WV wv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) wv[v] = T::load_w(w + v * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const auto a = T::bcast(xr[r * kn + k]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = T::madd(acc[r][v], a, wv[v]);
        }
    }
    const bool whole = ncols >= NV * W;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        float* o = out + (i0 + r) * n_out + j0;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            if (whole) T::store(o + v * W, acc[r][v]);
            else T::store_m(o + v * W, acc[r][v], m[v]);
        }
    }
}

template <class T, int R, int NV>
void strip_tail_rows(int rows, float* out, const typename T::E* x, const typename T::E* w, const float* b, int64_t kn,
                     int64_t n_out, int64_t i0, int64_t j0, int ncols, int64_t k0, int64_t k1) {
    if constexpr (R >= 1) {
        if (rows == R) return strip_tile<T, R, NV>(out, x, w, b, kn, n_out, i0, j0, ncols, k0, k1);
        strip_tail_rows<T, R - 1, NV>(rows, out, x, w, b, kn, n_out, i0, j0, ncols, k0, k1);
    }
}

// Terms per pass of a strip's row tiles: a product deeper than 1.5 x this goes in passes of
// it (the last one up to 1.5 x), so that the pass's part of the strip (192 x 32 floats, 24 KiB;
// a half strip 12 KiB) stays in L1 for every row tile of the piece. The encoder at batch 32,
// ATTN_ISA=avx2, 2 threads: 104.8 -> 97.7 ms (3 alternated runs; 384 or 768 a pass gained less).
constexpr int64_t kStripKBlock = 192;

// Rows [r0, r1) and columns [c0, c1) (c0 a multiple of kStrip) of out = x . strips + b.
template <class T, int R, int NV>
void strips_run(float* out, const typename T::E* x, const typename T::E* strips, const float* b, int64_t kn,
                int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    constexpr int64_t TW = int64_t{NV} * T::W;  // columns per tile
    static_assert(kStrip % TW == 0, "a tile covers a whole part of a strip");
    for (int64_t s0 = c0; s0 < c1; s0 += kStrip) {
        const typename T::E* strip = strips + (s0 / kStrip) * kn * kStrip;
        for (int64_t j0 = s0; j0 < s0 + kStrip && j0 < c1; j0 += TW) {
            const int ncols = static_cast<int>(c1 - j0 < TW ? c1 - j0 : TW);
            const typename T::E* w = strip + (j0 - s0);
            for (int64_t k0 = 0, k1 = 0; k0 < kn; k0 = k1) {
                k1 = kn - k0 > kStripKBlock + kStripKBlock / 2 ? k0 + kStripKBlock : kn;
                int64_t i0 = r0;
                for (; i0 + R <= r1; i0 += R) strip_tile<T, R, NV>(out, x, w, b, kn, n_out, i0, j0, ncols, k0, k1);
                if (i0 < r1)
                    strip_tail_rows<T, R - 1, NV>(static_cast<int>(r1 - i0), out, x, w, b, kn, n_out, i0, j0, ncols, k0,
                                                  k1);
            }
        }
    }
}

}  // namespace
}  // namespace attn::gemm
