// lib/cpu/src/flash_backward/flash_backward_kernel.hpp: private. The float32 FlashAttention-2
// backward, written once over the SIMD traits S of the forward (flash_kernel.hpp)
// and included by one .cpp per instruction set. Everything is in an anonymous
// namespace: each including file compiles its own copy for its own target.
//
// One work item is (b, h, chunk g) and owns key blocks g, g + G, ... of that head.
// For each of its key blocks (BK keys) it visits every query block (BQ queries)
// that may attend to it, and per (query block i, key block j) recomputes
//   pass 1  S2 = Q̂s K̂ᵀ log2(e)               [BQ][BK]  (Q̂s = Q̂ scale), + additive mask, masked_fill
//   pass 2  P = 2^(S2 - L2)                    [BQ][BK]  the forward's weights, from the saved L
//   pass 3  dPd = dO Vᵀ                        [BQ][BK]
//   pass 4  Pd = P ∘ keep/(1-p), dP = dPd ∘ keep/(1-p)  (dropout; otherwise Pd = P, dP = dPd)
//           dS = P ∘ (dP - D), 0 where masked  [BQ][BK]
//   pass 5  dV_j += Pdᵀ dO                     [BK][Dvp]
//   pass 6  dK_j += dSᵀ Q̂s                     [BK][Dkp]  (= dK̂, the scale is inside Q̂s)
//   pass 7  dqp_i += dS K̂                      [BQ][Dkp]  (dQ̂ / scale; flash_backward.cpp sums the chunks)
// and after its last query block writes dK_j and dV_j. Nothing of size Tq x Tk
// exists; the workspace is O((BQ + Dk + Dv) BK) floats per thread.
//
// Layout: passes 1 to 4 have their vector lanes along KEYS (BK = NK vectors), so
// K̂ and V blocks are transposed once per key block (KT, VT) and Q̂s, dO rows are
// broadcast; the row statistics L2 and D are per query, i.e. one broadcast per
// row. Passes 5 to 7 have their lanes along Dk or Dv (rows padded to kPad floats)
// and broadcast P, dS elements. Every GEMM is a register tile of R rows x up to
// NC vectors, accumulating in registers over the inner dimension.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "flash/flash_args.hpp"
#include "flash_backward_args.hpp"

namespace attn::flash_detail {
namespace {

// S: SIMD traits. NK: vectors per key block (BK = NK W). BQ: queries per block.
// R: register tile rows; NC: most vectors per register tile in passes 5-7.
template <class S, int NK, int BQ, int R, int NC>
struct FlashBwdF32 {
    using V = typename S::V;
    static constexpr int W = S::W;
    static constexpr int BK = NK * W;
    static_assert(kPad % W == 0, "padded rows are whole vectors");

    static size_t workspace_floats(const BwdArgs& a) {
        // KT, VT, Kp, dKa, dVa, then S/P, Pd, dP/dS
        return static_cast<size_t>(a.Dk * BK + a.Dv * BK + 2 * BK * a.Dkp + BK * a.Dvp + 3 * BQ * BK + 64);
    }

    // ---- passes 1 and 3: C[r][0..BK) = sum_d A[r][d] BT[d][0..BK), RR rows of A (stride lda)
    template <int RR>
    static inline void rows_x_keys(const float* A, int64_t lda, const float* BT, int64_t kdim, float* C) {
        V acc[RR][NK];
        for (int r = 0; r < RR; ++r)
            for (int v = 0; v < NK; ++v) acc[r][v] = S::zero();
        for (int64_t d = 0; d < kdim; ++d) {
            V b[NK];
            for (int v = 0; v < NK; ++v) b[v] = S::load(BT + d * BK + v * W);
            for (int r = 0; r < RR; ++r) {
                const V x = S::set1(A[r * lda + d]);
                for (int v = 0; v < NK; ++v) acc[r][v] = S::fmadd(x, b[v], acc[r][v]);
            }
        }
        for (int r = 0; r < RR; ++r)
            for (int v = 0; v < NK; ++v) S::store(C + r * BK + v * W, acc[r][v]);
    }
    template <int RR>
    static inline void rows_x_keys_rest(int rest, const float* A, int64_t lda, const float* BT, int64_t kdim,
                                        float* C) {
        if constexpr (RR > 0) {
            if (rest == RR) return rows_x_keys<RR>(A, lda, BT, kdim, C);
            return rows_x_keys_rest<RR - 1>(rest, A, lda, BT, kdim, C);
        }
    }
    // All nrows rows: C [nrows][BK] = A [nrows][kdim] BT [kdim][BK].
    static void gemm_keys(int nrows, const float* A, int64_t lda, const float* BT, int64_t kdim, float* C) {
        int r = 0;
        for (; r + R <= nrows; r += R) rows_x_keys<R>(A + r * lda, lda, BT, kdim, C + r * BK);
        if (r < nrows) rows_x_keys_rest<R - 1>(nrows - r, A + r * lda, lda, BT, kdim, C + r * BK);
    }

    // ---- passes 5 to 7: C[r][c0..c0+NV W) += sum_t A(r, t) Bm[t][c0..], A(r, t) = A[r sr + t st]
    template <int RR, int NV>
    static inline void acc_tile(const float* A, int64_t sr, int64_t st, int ninner, const float* Bm, int64_t ldb,
                                float* C, int64_t ldc) {
        V acc[RR][NV];
        for (int r = 0; r < RR; ++r)
            for (int v = 0; v < NV; ++v) acc[r][v] = S::load(C + r * ldc + v * W);
        for (int t = 0; t < ninner; ++t) {
            V b[NV];
            for (int v = 0; v < NV; ++v) b[v] = S::load(Bm + t * ldb + v * W);
            for (int r = 0; r < RR; ++r) {
                const V x = S::set1(A[r * sr + t * st]);
                for (int v = 0; v < NV; ++v) acc[r][v] = S::fmadd(x, b[v], acc[r][v]);
            }
        }
        for (int r = 0; r < RR; ++r)
            for (int v = 0; v < NV; ++v) S::store(C + r * ldc + v * W, acc[r][v]);
    }
    template <int RR>
    static inline void acc_tile_nv(int nv, const float* A, int64_t sr, int64_t st, int ninner, const float* Bm,
                                   int64_t ldb, float* C, int64_t ldc) {
        static_assert(NC <= 4, "acc_tile_nv dispatches up to 4 vectors");
        switch (nv) {
            case 1: return acc_tile<RR, 1>(A, sr, st, ninner, Bm, ldb, C, ldc);
            case 2: if constexpr (NC >= 2) return acc_tile<RR, 2>(A, sr, st, ninner, Bm, ldb, C, ldc); break;
            case 3: if constexpr (NC >= 3) return acc_tile<RR, 3>(A, sr, st, ninner, Bm, ldb, C, ldc); break;
            case 4: if constexpr (NC >= 4) return acc_tile<RR, 4>(A, sr, st, ninner, Bm, ldb, C, ldc); break;
            default: break;
        }
    }
    template <int RR>
    static inline void acc_rest(int rest, int nv, const float* A, int64_t sr, int64_t st, int ninner, const float* Bm,
                                int64_t ldb, float* C, int64_t ldc) {
        if constexpr (RR > 0) {
            if (rest == RR) return acc_tile_nv<RR>(nv, A, sr, st, ninner, Bm, ldb, C, ldc);
            return acc_rest<RR - 1>(rest, nv, A, sr, st, ninner, Bm, ldb, C, ldc);
        }
    }
    // C [nrows][ncols] += A(nrows x ninner) Bm [ninner][ncols]; ncols a multiple of W.
    static void gemm_acc(int nrows, int64_t ncols, const float* A, int64_t sr, int64_t st, int ninner, const float* Bm,
                         int64_t ldb, float* C, int64_t ldc) {
        for (int64_t c0 = 0; c0 < ncols; c0 += NC * W) {
            const int nv = static_cast<int>(std::min<int64_t>(NC, (ncols - c0) / W));
            int r = 0;
            for (; r + R <= nrows; r += R)
                acc_tile_nv<R>(nv, A + r * sr, sr, st, ninner, Bm + c0, ldb, C + r * ldc + c0, ldc);
            if (r < nrows)
                acc_rest<R - 1>(nrows - r, nv, A + r * sr, sr, st, ninner, Bm + c0, ldb, C + r * ldc + c0, ldc);
        }
    }

    // KT [Dk][BK] = K̂ rows j0 .. j0 + nk - 1 transposed, times log2(e); zero columns past nk.
    static void pack_kt(const float* kn, int64_t Dk, int64_t j0, int nk, float* KT) {
        for (int64_t d = 0; d < Dk; ++d) {
            for (int j = 0; j < nk; ++j) KT[d * BK + j] = kn[(j0 + j) * Dk + d] * kLog2e;
            for (int j = nk; j < BK; ++j) KT[d * BK + j] = 0.0f;
        }
    }

    // S2 [nq][BK] = Q̂s K̂ᵀ log2(e) for queries i0.., keys j0..j0+nk-1, plus the additive
    // mask, masked keys set to the row's F2. run_item and refine_item both call this, so
    // the refined row max is bit for bit the score that run_item recomputes.
    static void scores(const MaskRow& mask, int nq, int64_t i0, int64_t j0, int nk, const float* qs_i, int64_t Dkp,
                       const float* KT, int64_t Dk, const float* F2, float* P) {
        gemm_keys(nq, qs_i, Dkp, KT, Dk, P);
        // masks, element-wise where the tile needs it
        if (!mask.tile_all_allowed(i0, i0 + nq - 1, j0, j0 + nk - 1))
            for (int i = 0; i < nq; ++i) {
                float* row = P + i * BK;
                const int64_t gi = i0 + i;
                if (mask.additive != nullptr)
                    for (int j = 0; j < nk; ++j) row[j] += mask.additive[gi * mask.additive_stride + j0 + j] * kLog2e;
                const float fill = F2[gi];
                for (int j = 0; j < nk; ++j)
                    if (!mask.allowed(gi, j0 + j)) row[j] = fill;
            }
    }

    // Work item (b h, query block qb): see BwdKernel::refine_item. Rows of a block with no
    // large |L2| keep L2 and Lo2 = 0; a row that is all masked with fill -inf keeps L2 = +inf.
    static void refine_item(const BwdArgs& a, int64_t item, float* ws, float* L2all, float* Lo2all) {
        const int64_t nqb = (a.Tq + BQ - 1) / BQ;
        const int64_t bh = item / nqb, qb = item % nqb;
        const int64_t Tq = a.Tq, Tk = a.Tk, Dk = a.Dk, Dkp = a.Dkp;
        const int64_t i0 = qb * BQ;
        const int nq = static_cast<int>(std::min<int64_t>(BQ, Tq - i0));
        float* L2 = L2all + bh * Tq + i0;
        float* Lo2 = Lo2all + bh * Tq + i0;
        bool large = false;
        for (int i = 0; i < nq; ++i) large = large || (std::fabs(L2[i]) > kRefineAbove && std::isfinite(L2[i]));
        if (!large) return;
        const float* qs_i = a.qs + (bh * Tq + i0) * Dkp;
        const float* kn = a.kn + bh * Tk * Dk;
        const float* F2 = a.F2 + bh * Tq;
        const MaskRow mask = a.mask->row(bh / a.H, bh % a.H, Tk);
        float* KT = ws;           // [Dk][BK]
        float* P = KT + Dk * BK;  // [BQ][BK]
        float m[BQ];
        double sum[BQ];
        for (int i = 0; i < nq; ++i) m[i] = -std::numeric_limits<float>::infinity(), sum[i] = 0.0;
        // online: the running max m (an exact score) and sum 2^(s2 - m) in double
        for (int64_t j0 = 0; j0 < Tk; j0 += BK) {
            const int nk = static_cast<int>(std::min<int64_t>(BK, Tk - j0));
            pack_kt(kn, Dk, j0, nk, KT);
            scores(mask, nq, i0, j0, nk, qs_i, Dkp, KT, Dk, F2, P);
            for (int i = 0; i < nq; ++i) {
                const float* row = P + i * BK;
                float mx = m[i];
                for (int j = 0; j < nk; ++j) mx = std::max(mx, row[j]);
                if (mx == -std::numeric_limits<float>::infinity()) continue;
                double s =
                    m[i] == -std::numeric_limits<float>::infinity() ? 0.0 : sum[i] * std::exp2(double(m[i]) - mx);
                for (int j = 0; j < nk; ++j) s += std::exp2(double(row[j]) - mx);
                m[i] = mx, sum[i] = s;
            }
        }
        for (int i = 0; i < nq; ++i)
            if (std::isfinite(L2[i]) && m[i] != -std::numeric_limits<float>::infinity()) {
                L2[i] = m[i];
                Lo2[i] = static_cast<float>(std::log2(sum[i]));
            }
    }

    static void run_item(const BwdArgs& a, int64_t item, float* ws) {
        // q̂s (Tq, Dkp), k̂ (Tk, Dk), v (Tk, Dv), dO (Tq, Dvp) of head bh; this item is chunk g of its key blocks.
        const int64_t bh = item / a.G, g = item % a.G;
        const int64_t b = bh / a.H;
        const int64_t Tq = a.Tq, Tk = a.Tk, Dk = a.Dk, Dv = a.Dv, Dkp = a.Dkp, Dvp = a.Dvp;
        const float* qs = a.qs + bh * Tq * Dkp;
        const float* kn = a.kn + bh * Tk * Dk;
        const float* vv = a.v + bh * Tk * Dv;
        const float* dO = a.dO + bh * Tq * Dvp;
        const float* L2 = a.L2 + bh * Tq;
        const float* Dr = a.Dr + bh * Tq;
        const float* F2 = a.F2 + bh * Tq;
        const float* Lo2 = a.Lo2 + bh * Tq;
        float* dqp = a.dqp + (g * a.B * a.H + bh) * Tq * Dkp;  // this chunk's share of dQ̂ / scale
        std::memset(dqp, 0, sizeof(float) * static_cast<size_t>(Tq * Dkp));

        float* KT = ws;               // [Dk][BK]   K̂ block transposed, times log2(e); zero columns past nk
        float* VT = KT + Dk * BK;     // [Dv][BK]   V block transposed
        float* Kp = VT + Dv * BK;     // [BK][Dkp]  K̂ block, padded rows
        float* dKa = Kp + BK * Dkp;   // [BK][Dkp]  dK̂ of the block
        float* dVa = dKa + BK * Dkp;  // [BK][Dvp]  dV of the block
        float* P = dVa + BK * Dvp;    // [BQ][BK]   S2, then P
        float* Pd = P + BQ * BK;      // [BQ][BK]   dropped P (dropout only)
        float* dS = Pd + BQ * BK;     // [BQ][BK]   dPd, then dS

        const MaskRow mask = a.mask->row(b, bh % a.H, Tk);
        const float keep_scale = a.dropout ? 1.0f / (1.0f - a.drop_p) : 1.0f;
        const int64_t nkb = (Tk + BK - 1) / BK, nqb = (Tq + BQ - 1) / BQ;

        for (int64_t jb = g; jb < nkb; jb += a.G) {
            const int64_t j0 = jb * BK;
            const int nk = static_cast<int>(std::min<int64_t>(BK, Tk - j0));
            pack_key_block(a, kn, vv, j0, nk, KT, VT, Kp, dKa, dVa);

            // With fill -inf only the queries that may attend to the block (causal and a
            // band, MaskRow::query_begin / query_end) get any gradient from it.
            const int64_t qb_first = a.fill_ninf ? mask.query_begin(j0) / BQ : 0;
            const int64_t qb_end = a.fill_ninf ? (mask.query_end(j0 + nk - 1, Tq) + BQ - 1) / BQ : nqb;
            for (int64_t qb = qb_first; qb < qb_end; ++qb) {
                const int64_t i0 = qb * BQ;
                const int nq = static_cast<int>(std::min<int64_t>(BQ, Tq - i0));
                const float* qs_i = qs + i0 * Dkp;
                const float* dO_i = dO + i0 * Dvp;
                const bool all_masked = j0 >= mask.key_end(i0 + nq - 1) ||
                                        (mask.sparse && !mask.any_allowed(i0, i0 + nq - 1, j0, j0 + nk - 1));
                if (all_masked) {
                    // Causal, padding or the sparse pattern mask the whole tile. With fill -inf its weights are 0: no
                    // gradient at all. With a finite fill every score is the fill: the
                    // weights 2^(fill2 - L2) reach dV (unless below 2^-160, i.e. 0 in
                    // float, as in the forward), and dS is 0 (masked_fill).
                    if (a.fill_ninf) continue;
                    bool negligible = true;
                    for (int i = 0; i < nq; ++i) negligible = negligible && (L2[i0 + i] - F2[i0 + i] > 160.0f);
                    if (negligible) continue;
                    for (int i = 0; i < nq; ++i) {
                        const V p =
                            S::exp2(S::sub(S::sub(S::set1(F2[i0 + i]), S::set1(L2[i0 + i])), S::set1(Lo2[i0 + i])));
                        for (int v = 0; v < NK; ++v) S::store(P + i * BK + v * W, p);
                    }
                } else {
                    // pass 1: S2 = Q̂s K̂ᵀ log2(e), masked
                    scores(mask, nq, i0, j0, nk, qs_i, Dkp, KT, Dk, F2, P);
                    // pass 2: P = 2^((S2 - L2) - Lo2)
                    for (int i = 0; i < nq; ++i) {
                        const V l2 = S::set1(L2[i0 + i]), lo2 = S::set1(Lo2[i0 + i]);
                        for (int v = 0; v < NK; ++v)
                            S::store(P + i * BK + v * W, S::exp2(S::sub(S::sub(S::load(P + i * BK + v * W), l2), lo2)));
                    }
                    // pass 3: dPd = dO Vᵀ
                    gemm_keys(nq, dO_i, Dvp, VT, Dv, dS);
                }
                // pass 4: dropout, then dS = P ∘ (dP - D)
                const float* Pv = P;  // the weights that multiplied V
                if (a.dropout) {
                    for (int i = 0; i < nq; ++i) {
                        const uint64_t row = static_cast<uint64_t>((bh * Tq + i0 + i) * Tk + j0);
                        for (int j = 0; j < nk; ++j) {
                            const bool drop = dropout_drops(a.seed, row + static_cast<uint64_t>(j), a.drop_p);
                            Pd[i * BK + j] = drop ? 0.0f : P[i * BK + j] * keep_scale;
                            if (!all_masked) dS[i * BK + j] = drop ? 0.0f : dS[i * BK + j] * keep_scale;
                        }
                    }
                    Pv = Pd;
                }
                // pass 5: dV_j += Pdᵀ dO
                gemm_acc(nk, Dvp, Pv, 1, BK, nq, dO_i, Dvp, dVa, Dvp);
                if (all_masked) continue;
                for (int i = 0; i < nq; ++i) {
                    const V dd = S::set1(Dr[i0 + i]);
                    for (int v = 0; v < NK; ++v) {
                        const V p = S::load(P + i * BK + v * W);
                        S::store(dS + i * BK + v * W, S::mul(p, S::sub(S::load(dS + i * BK + v * W), dd)));
                    }
                }
                if (!mask.tile_all_allowed(i0, i0 + nq - 1, j0, j0 + nk - 1))
                    for (int i = 0; i < nq; ++i)
                        for (int j = 0; j < nk; ++j)
                            if (!mask.allowed(i0 + i, j0 + j)) dS[i * BK + j] = 0.0f;
                // pass 6: dK_j += dSᵀ Q̂s
                gemm_acc(nk, Dkp, dS, 1, BK, nq, qs_i, Dkp, dKa, Dkp);
                // pass 7: dqp_i += dS K̂
                gemm_acc(nq, Dkp, dS, BK, 1, nk, Kp, Dkp, dqp + i0 * Dkp, Dkp);
            }
            write_key_block(a, bh, j0, nk, dKa, dVa);
        }
    }

    // Pack the key block once: KT, VT (transposed, zero past nk), Kp (padded); its dK̂ and dV zero.
    [[gnu::always_inline]] static inline void pack_key_block(const BwdArgs& a, const float* kn, const float* vv,
                                                             int64_t j0, int nk, float* KT, float* VT, float* Kp,
                                                             float* dKa, float* dVa) {
        const int64_t Dk = a.Dk, Dv = a.Dv, Dkp = a.Dkp, Dvp = a.Dvp;
        pack_kt(kn, Dk, j0, nk, KT);
        for (int64_t e = 0; e < Dv; ++e) {
            for (int j = 0; j < nk; ++j) VT[e * BK + j] = vv[(j0 + j) * Dv + e];
            for (int j = nk; j < BK; ++j) VT[e * BK + j] = 0.0f;
        }
        std::memset(Kp, 0, sizeof(float) * static_cast<size_t>(BK * Dkp));
        for (int j = 0; j < nk; ++j)
            std::memcpy(Kp + j * Dkp, kn + (j0 + j) * Dk, sizeof(float) * static_cast<size_t>(Dk));
        std::memset(dKa, 0, sizeof(float) * static_cast<size_t>(BK * Dkp));
        std::memset(dVa, 0, sizeof(float) * static_cast<size_t>(BK * Dvp));
    }

    // Write the key block's gradients (the padded rows of dKa, dVa) to dK and dV.
    [[gnu::always_inline]] static inline void write_key_block(const BwdArgs& a, int64_t bh, int64_t j0, int nk,
                                                              const float* dKa, const float* dVa) {
        const int64_t Tk = a.Tk, Dk = a.Dk, Dv = a.Dv, Dkp = a.Dkp, Dvp = a.Dvp;
        float* dk = a.dk + (bh * Tk + j0) * Dk;
        float* dv = a.dv + (bh * Tk + j0) * Dv;
        for (int j = 0; j < nk; ++j) {
            std::memcpy(dk + j * Dk, dKa + j * Dkp, sizeof(float) * static_cast<size_t>(Dk));
            std::memcpy(dv + j * Dv, dVa + j * Dvp, sizeof(float) * static_cast<size_t>(Dv));
        }
    }
};

}  // namespace
}  // namespace attn::flash_detail
