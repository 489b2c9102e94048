// lib/cpu/src/flash/flash_kernel.hpp: private. The float32 FlashAttention forward, written
// once over a small SIMD "traits" type S (vector V of S::W floats and a few ops),
// and included by one .cpp per instruction set (generic, AVX2, AVX-512). Every
// name here is in an anonymous namespace: each including file gets its own copy,
// compiled for its own target, so no inline function can be shared across ISAs.
//
// Layout: lanes are QUERIES. For a block of BQ = NV * W queries:
//   QT  [Dk][BQ]   q block transposed, times scale*log2(e) (cosine: rows normalised)
//   ST  [BK][BQ]   scores of BK keys against the block; then, in place, P = 2^(s - m)
//   OT  [Dv][BQ]   running un-normalised output, transposed
//   m, l [BQ]      reference point (the running max, or up to 8 below it: log2 units;
//                  pass 3b) and running sum of P per query
// Because lanes are queries, the softmax bookkeeping (max over keys, sum over
// keys, the rescale alpha = 2^(m_old - m_new)) is plain vertical vector maths:
// no horizontal reductions and no transposes in the inner loops. K and V are read
// in their natural (Tk, D) layout: their elements are broadcast, so neither is
// ever packed or copied. Only the q block is transposed, once per block.
//
// The two small GEMMs per (query block, key block):
//   pass 2: ST[j][i] = sum_d K[j][d] * QT[d][i]   register tile RS keys x NV vectors
//   pass 4: OT[e][i] = alpha[i] OT[e][i] + sum_j V[j][e] * P[j][i]   RP dims x NV vectors
// Each tile loads NV vectors and RS (or RP) broadcasts per NV*RS FMAs, which keeps
// the FMA unit (not the load ports) the bottleneck.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "flash_args.hpp"

namespace attn::flash_detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Cosine scale: rows are divided by max(||x||, eps), as F.normalize does.
constexpr float kNormEps = 1e-12f;
// How far (log2 units) a block's maximum may rise over the online softmax's reference point
// before the point moves (FlashF32, pass 3b): weights up to 2^8, OT rescaled rarely.
constexpr float kLazyGrow = 8.0f;

inline float inv_norm(const float* x, int64_t n) {
    float s = 0.0f;
    for (int64_t d = 0; d < n; ++d) s += x[d] * x[d];
    return 1.0f / std::max(std::sqrt(s), kNormEps);
}

inline uint32_t load_u32(const void* p) {
    uint32_t x;
    std::memcpy(&x, p, 4);
    return x;
}

// S: SIMD traits. NV: vectors per query block; NT: vectors per register tile
// (the tiles sweep the block NV / NT times). RS, RP: register tile heights of
// pass 2 and pass 4. BK: keys per block (even). BF16: the two GEMMs take bf16
// operands, two products per lane per instruction (vdpbf16ps), with float32
// accumulation; S then also provides VP (a vector of bf16 pairs), loadp, set1p,
// dp (acc + pairwise dot) and pack_pairs (two float rows -> one row of pairs).
// ROUND (with BF16 false): the float32 GEMMs on operands rounded to bf16 values, for
// CPUs without a bf16 dot product: the caller passes K and V already rounded (still
// float32), pass 1 rounds the scaled q block and pass 4 rounds P (S::round_bf16, to
// nearest even). A product of two bf16 values is exact in float32, so each score and
// output term is what a pairwise bf16 kernel adds (the same products in the same
// ascending order), at the float32 kernel's speed; with the cosine scale the key norms
// are those of the rounded K.
template <class S, int NV, int NT, int RS, int RP, int BK, bool BF16 = false, bool ROUND = false>
struct FlashF32 {
    // Pass 4 reads the key block's V rows; they come from L2 (or further), and with ST, the
    // V block and OT the L1 is nearly full. The softmax pass asks for each row's cache lines
    // as it goes (prefetch_v_row), so the rows are on their way during that pass's
    // arithmetic rather than stalling pass 4's first broadcasts. That measured faster than
    // asking for the row a few keys ahead inside the first pass-4 tile (one row in nk per
    // key, with a clamp in every step of the loop): on a Sapphire Rapids Xeon, T 4096,
    // Dk 64, 1 thread, the AVX2 forward went from 77% to 82% of the FMA loop and the
    // AVX-512 one from 76% to 79%. Asking for the next key block's K rows as well (to L1 or
    // L2) measured slower on both.
    static constexpr int64_t kLineFloats = 16;  // 64-byte cache lines
    // The lines are asked for in `parts` interleaved shares, one per vector group of the
    // softmax pass (share `part` takes lines part, part + parts, ...), so they trickle out
    // over the whole pass rather than in one burst that fills the line-fill buffers.
    static void prefetch_v_row(const void* rows, int j, int64_t Dv, int part, int parts) {
        // fp32: row j of V is Dv floats. BF16: V is in pairs of keys (Dv pairs of bf16 a row),
        // so an even key asks for the pair row that holds it and the next key.
        if constexpr (BF16) {
            if (j % 2 != 0) return;
            j /= 2;
        }
        const float* row = static_cast<const float*>(rows) + j * Dv;  // 4-byte lanes either way
        for (int64_t e = part * kLineFloats; e < Dv; e += parts * kLineFloats) __builtin_prefetch(row + e);
    }
    using V = typename S::V;
    static constexpr int W = S::W;
    static constexpr int BQ = NV * W;
    static_assert(NV % NT == 0, "a query block is a whole number of register tiles");

    // 0, 1, ..., BQ − 1 as floats: the lane (query) offsets within a block, for ALiBi.
    static const float* lane_index() {
        alignas(64) static const auto idx = [] {
            struct L {
                float v[BQ];
            } l{};
            for (int i = 0; i < BQ; ++i) l.v[i] = static_cast<float>(i);
            return l;
        }();
        return idx.v;
    }

    static size_t workspace_floats(const Args& a) {
        // QT + ST + OT + m, l, alpha + rk (cosine key norms) + PT2 (bf16 pairs of P)
        return static_cast<size_t>((a.Dk + 1) * BQ + BK * BQ + a.Dv * BQ + 3 * BQ + BK + (BF16 ? BK / 2 * BQ : 0) + 64);
    }

    // pass 2 tile: R keys (rows of K from kp, stride Dk) against the whole q block.
    template <int R>
    static inline void score_tile(const float* kp, const float* QT, float* ST, int64_t Dk) {
        V acc[R][NT];
        _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r)
            _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) acc[r][v] = S::zero();
        _Pragma("GCC unroll 2") for (int64_t d = 0; d < Dk; ++d) {
            V qv[NT];
            _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) qv[v] = S::load(QT + d * BQ + v * W);
            _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {
                const V kb = S::set1(kp[r * Dk + d]);
                _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) acc[r][v] = S::fmadd(kb, qv[v], acc[r][v]);
            }
        }
        _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r)
            _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) S::store(ST + r * BQ + v * W, acc[r][v]);
    }

    // pass 4 tile: R output dims e0..e0+R-1 (vp points at V[j0][e0], stride Dv).
    template <int R>
    static inline void pv_tile(const float* vp, const float* P, float* OT, const float* alpha, int nk,
                               int64_t Dv) {
        V acc[R][NT];
        _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) {
            if (alpha == nullptr) {  // no lane's reference point moved in this block
                _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) acc[r][v] = S::load(OT + r * BQ + v * W);
                continue;
            }
            const V al = S::load(alpha + v * W);
            _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) acc[r][v] = S::mul(S::load(OT + r * BQ + v * W), al);
        }
        _Pragma("GCC unroll 2") for (int j = 0; j < nk; ++j) {
            V pv[NT];
            _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) pv[v] = S::load(P + j * BQ + v * W);
            _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {
                const V vb = S::set1(vp[j * Dv + r]);
                _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) acc[r][v] = S::fmadd(vb, pv[v], acc[r][v]);
            }
        }
        _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r)
            _Pragma("GCC unroll 16") for (int v = 0; v < NT; ++v) S::store(OT + r * BQ + v * W, acc[r][v]);
    }

    template <int R>
    static inline void score_rest(int rest, const float* kp, const float* QT, float* ST, int64_t Dk) {
        if constexpr (R > 0) {
            if (rest == R) return score_tile<R>(kp, QT, ST, Dk);
            return score_rest<R - 1>(rest, kp, QT, ST, Dk);
        }
    }
    template <int R>
    static inline void pv_rest(int rest, const float* vp, const float* P, float* OT, const float* alpha,
                               int nk, int64_t Dv) {
        if constexpr (R > 0) {
            if (rest == R) return pv_tile<R>(vp, P, OT, alpha, nk, Dv);
            return pv_rest<R - 1>(rest, vp, P, OT, alpha, nk, Dv);
        }
    }

    // bf16 pass 2 tile: R keys (kp: bf16 rows, stride Dk2) against QT2 [Dk2/2][BQ] pairs.
    template <int R>
    static inline void score_tile_bf16(const uint16_t* kp, const uint32_t* QT2, float* ST, int64_t Dk2) {
        V acc[R][NT];
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NT; ++v) acc[r][v] = S::zero();
        for (int64_t dp = 0; dp < Dk2 / 2; ++dp) {
            typename S::VP qv[NT];
            for (int v = 0; v < NT; ++v) qv[v] = S::loadp(QT2 + dp * BQ + v * W);
            for (int r = 0; r < R; ++r) {
                const typename S::VP kb = S::set1p(load_u32(kp + r * Dk2 + 2 * dp));
                for (int v = 0; v < NT; ++v) acc[r][v] = S::dp(acc[r][v], kb, qv[v]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NT; ++v) S::store(ST + r * BQ + v * W, acc[r][v]);
    }
    // bf16 pass 4 tile: R dims; vp: V pairs (jp, e0..), stride Dv pairs; PT2 [np][BQ] pairs.
    template <int R>
    static inline void pv_tile_bf16(const uint32_t* vp, const uint32_t* PT2, float* OT, const float* alpha, int np,
                                    int64_t Dv) {
        V acc[R][NT];
        for (int v = 0; v < NT; ++v) {
            if (alpha == nullptr) {  // no lane's reference point moved in this block
                for (int r = 0; r < R; ++r) acc[r][v] = S::load(OT + r * BQ + v * W);
                continue;
            }
            const V al = S::load(alpha + v * W);
            for (int r = 0; r < R; ++r) acc[r][v] = S::mul(S::load(OT + r * BQ + v * W), al);
        }
        for (int jp = 0; jp < np; ++jp) {
            typename S::VP pv[NT];
            for (int v = 0; v < NT; ++v) pv[v] = S::loadp(PT2 + jp * BQ + v * W);
            for (int r = 0; r < R; ++r) {
                const typename S::VP vb = S::set1p(vp[jp * Dv + r]);
                for (int v = 0; v < NT; ++v) acc[r][v] = S::dp(acc[r][v], vb, pv[v]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NT; ++v) S::store(OT + r * BQ + v * W, acc[r][v]);
    }
    template <int R>
    static inline void score_rest_bf16(int rest, const uint16_t* kp, const uint32_t* QT2, float* ST, int64_t Dk2) {
        if constexpr (R > 0) {
            if (rest == R) return score_tile_bf16<R>(kp, QT2, ST, Dk2);
            return score_rest_bf16<R - 1>(rest, kp, QT2, ST, Dk2);
        }
    }
    template <int R>
    static inline void pv_rest_bf16(int rest, const uint32_t* vp, const uint32_t* PT2, float* OT, const float* alpha,
                                    int np, int64_t Dv) {
        if constexpr (R > 0) {
            if (rest == R) return pv_tile_bf16<R>(vp, PT2, OT, alpha, np, Dv);
            return pv_rest_bf16<R - 1>(rest, vp, PT2, OT, alpha, np, Dv);
        }
    }

    // Sets to fill2 the scores ST [nk][BQ] (lanes = queries i0 + i) that the sparse part
    // masks. Per key j the band allows the lanes i0 + i in [j - after, j + before]; the
    // lanes outside it are filled unless the query is global or d = i - j is on the stride.
    static void mask_sparse(const MaskRow& mask, int64_t i0, int nq, int64_t j0, int nk, float* ST, float fill2) {
        for (int jj = 0; jj < nk; ++jj) {
            const int64_t j = j0 + jj;
            if (j < mask.global) continue;
            float* row = ST + jj * BQ;
            const int64_t lo = std::clamp<int64_t>(j - mask.after - i0, 0, nq);
            const int64_t hi = std::clamp<int64_t>(j + mask.before + 1 - i0, lo, nq);
            if (mask.stride == 0 && mask.global == 0) {
                std::fill(row, row + lo, fill2);
                std::fill(row + hi, row + nq, fill2);
                continue;
            }
            // lanes kept outside the band: the global queries (a prefix) and the stride's
            // lanes i = r0 + t·stride; the rest is filled, the stride's lanes saved and restored
            const int64_t gp = std::clamp<int64_t>(mask.global - i0, 0, nq);
            float saved[BQ];
            int idx[BQ];
            int ns = 0;
            if (mask.stride > 0)
                for (int64_t i = (((j - i0) % mask.stride) + mask.stride) % mask.stride; i < nq; i += mask.stride)
                    if (i >= gp && (i < lo || i >= hi)) {
                        idx[ns] = static_cast<int>(i);
                        saved[ns++] = row[i];
                    }
            std::fill(row + gp, row + std::max(lo, gp), fill2);
            std::fill(row + std::max(hi, gp), row + nq, fill2);
            for (int t = 0; t < ns; ++t) row[idx[t]] = saved[t];
        }
    }

    // One work item: one (b, h) and one block of BQ queries, its inputs and its workspace.
    // q (B,H,Tq,Dk), k (B,H,Tk,Dk), v (B,H,Tk,Dv) -> out (B,H,Tq,Dv).
    struct Item {
        int64_t bh, qb, h, i0, last_q;
        int nq;
        const float* q;   // (nq, Dk)
        const float* k;   // (Tk, Dk)
        const float* vv;  // (Tk, Dv)
        float* out;       // (nq, Dv)
        float *QT, *ST, *OT, *m, *l, *alpha, *rk;
        uint32_t *QT2, *PT2;
        int64_t Dk2, Tk2;
        // causal and key_len are applied to whole blocks; dense and additive element by element
        MaskRow mask;
    };

    // What to do with a key block that the mask covers whole (see run_item).
    enum class Masked { skip, stop, filled };

    [[gnu::always_inline]] static inline Item setup_item(const Args& a, int64_t item, float* ws) {
        Item it;
        const int64_t nqb = (a.Tq + BQ - 1) / BQ;
        const int64_t bh = item / nqb;
        // Reversed: under a causal mask the last query blocks cost the most, and
        // handing them out first balances the threads.
        const int64_t qb = nqb - 1 - item % nqb;
        const int64_t b = bh / a.H;
        const int64_t i0 = qb * BQ;
        const int nq = static_cast<int>(std::min<int64_t>(BQ, a.Tq - i0));
        const int64_t Dk = a.Dk, Dv = a.Dv, Tk = a.Tk;
        const int64_t h = bh % a.H;
        const int64_t bkv = b * a.Hkv + h / (a.H / a.Hkv);  // grouped-query: the kv head of query head h
        it.bh = bh, it.qb = qb, it.h = h, it.i0 = i0, it.nq = nq, it.last_q = i0 + nq - 1;
        it.q = a.q + (bh * a.Tq + i0) * Dk;
        it.k = a.k + bkv * Tk * Dk;
        it.vv = a.v + bkv * Tk * Dv;
        it.out = a.out + (bh * a.Tq + i0) * Dv;

        it.QT = ws;                    // [Dk][BQ]
        it.ST = it.QT + Dk * BQ;       // [BK][BQ]
        it.OT = it.ST + BK * BQ;       // [Dv][BQ]
        it.m = it.OT + Dv * BQ;        // [BQ]
        it.l = it.m + BQ;              // [BQ]
        it.alpha = it.l + BQ;          // [BQ]
        it.rk = it.alpha + BQ;         // [BK]
        // bf16 only: QT2 [Dk2/2][BQ] pairs in the QT area, PT2 [BK/2][BQ] pairs after rk
        it.Dk2 = (Dk + 1) / 2 * 2, it.Tk2 = (Tk + 1) / 2;
        it.QT2 = reinterpret_cast<uint32_t*>(it.QT);
        it.PT2 = reinterpret_cast<uint32_t*>(it.rk + BK);
        it.mask = a.mask->row(b, bh % a.H, Tk);
        return it;
    }

    // pass 1: QT = (q * scale * log2 e)^T, padding lanes zero; state reset
    [[gnu::always_inline]] static inline void load_q_block(const Args& a, const Item& it) {
        const int64_t Dk = a.Dk, Dk2 = it.Dk2;
        const int nq = it.nq;
        const float* q = it.q;
        float* QT = it.QT;
        uint32_t* QT2 = it.QT2;
        for (int i = 0; i < BQ; ++i) {
            if constexpr (BF16) {
                // lane i of row dp: bf16(q[i][2dp]) | bf16(q[i][2dp+1]) << 16
                const float f = i < nq ? a.qscale * (a.cosine ? inv_norm(q + i * Dk, Dk) : 1.0f) : 0.0f;
                for (int64_t dp = 0; dp < Dk2 / 2; ++dp) {
                    const float x0 = i < nq ? q[i * Dk + 2 * dp] * f : 0.0f;
                    const float x1 = i < nq && 2 * dp + 1 < Dk ? q[i * Dk + 2 * dp + 1] * f : 0.0f;
                    QT2[dp * BQ + i] = static_cast<uint32_t>(to_bf16(x0)) | (static_cast<uint32_t>(to_bf16(x1)) << 16);
                }
            } else if (i < nq) {
                const float f = a.qscale * (a.cosine ? inv_norm(q + i * Dk, Dk) : 1.0f);
                for (int64_t d = 0; d < Dk; ++d)
                    QT[d * BQ + i] = ROUND ? bf16_value(q[i * Dk + d] * f) : q[i * Dk + d] * f;
            } else {
                for (int64_t d = 0; d < Dk; ++d) QT[d * BQ + i] = 0.0f;
            }
            it.m[i] = kNegInf;
            it.l[i] = 0.0f;
        }
        std::memset(it.OT, 0, sizeof(float) * static_cast<size_t>(a.Dv * BQ));
    }

    // A key block the mask covers whole, for every query of the block. Causal, padding and a band
    // mask this block and every later one for all queries of the block (MaskRow::key_end;
    // past_end), or the sparse pattern masks this block whole (MaskRow::any_allowed): then the
    // later ones may still hold allowed keys, and the loop goes on instead of stopping.
    // With fill = -inf they weigh exactly 0. With a finite fill each masked
    // key has score `fill` and weight 2^(fill2 - m): exactly 0 in float once
    // m - fill2 > 160 (2^-160 is below the smallest denormal), as in the
    // reference. Otherwise (e.g. a fully masked row, or fill = 0) they are
    // processed as keys whose score is the fill (ST filled with it).
    [[gnu::always_inline]] static inline Masked masked_block(const Args& a, const Item& it, int nk, bool past_end) {
        if (a.fill_ninf) return Masked::skip;
        bool negligible = true;
        for (int i = 0; i < it.nq; ++i) negligible = negligible && (it.m[i] - a.fill2 > 160.0f);
        if (negligible) return past_end ? Masked::stop : Masked::skip;
        for (int j = 0; j < nk; ++j) std::fill(it.ST + j * BQ, it.ST + (j + 1) * BQ, a.fill2);
        return Masked::filled;
    }

    // pass 2: scores ST = K_blk QT (then, with the cosine scale, each key's column times 1/‖k‖)
    [[gnu::always_inline]] static inline void block_scores(const Args& a, const Item& it, int64_t j0, int nk) {
        const int64_t Dk = a.Dk, Dk2 = it.Dk2;
        float* ST = it.ST;
        const float* kp = it.k + j0 * Dk;
        for (int v0 = 0; v0 < NV; v0 += NT) {
            int j = 0;
            if constexpr (BF16) {
                const uint16_t* kbp = a.kb + (it.bh * a.Tk + j0) * Dk2;
                for (; j + RS <= nk; j += RS)
                    score_tile_bf16<RS>(kbp + j * Dk2, it.QT2 + v0 * W, ST + j * BQ + v0 * W, Dk2);
                if (j < nk)
                    score_rest_bf16<RS - 1>(nk - j, kbp + j * Dk2, it.QT2 + v0 * W, ST + j * BQ + v0 * W, Dk2);
            } else {
                for (; j + RS <= nk; j += RS) score_tile<RS>(kp + j * Dk, it.QT + v0 * W, ST + j * BQ + v0 * W, Dk);
                if (j < nk) score_rest<RS - 1>(nk - j, kp + j * Dk, it.QT + v0 * W, ST + j * BQ + v0 * W, Dk);
            }
        }
        if (a.cosine) {
            for (int jj = 0; jj < nk; ++jj) it.rk[jj] = inv_norm(kp + jj * Dk, Dk);
            for (int jj = 0; jj < nk; ++jj) {
                const V f = S::set1(it.rk[jj]);
                for (int v = 0; v < NV; ++v) S::store(ST + jj * BQ + v * W, S::mul(S::load(ST + jj * BQ + v * W), f));
            }
        }
    }

    // pass 3a': softcap and ALiBi, vertical vector maths on the tile, only when asked.
    // Softcap in log2 units (s2 = s log2 e): c tanh(s/c) log2 e = c2 sign(s2) (1 − E)/(1 + E),
    // E = 2^(−2|s2|/c) <= 1 (the kernel's exp2 takes arguments <= 0), c2 = c log2 e.
    // The sign without a blend: t >= 0 and |tanh x| <= |x|, so max(min(s2 4/c, t), −t)
    // is t for s2 >= 0 and −t below. Error ~1e-7 of c (1 − E loses ulps of 1 near 0):
    // the float32 rounding of a score of size c.
    [[gnu::always_inline]] static inline void softcap_and_alibi(const Args& a, const Item& it, int64_t j0, int nk) {
        float* ST = it.ST;
        if (a.softcap > 0.0f) {
            const V c2 = S::set1(a.softcap * kLog2e), nk2 = S::set1(-2.0f / a.softcap);
            const V k4 = S::set1(4.0f / a.softcap), one = S::set1(1.0f), zero = S::zero();
            for (int jj = 0; jj < nk; ++jj)
                for (int v = 0; v < NV; ++v) {
                    const V s2 = S::load(ST + jj * BQ + v * W);
                    const V e = S::exp2(S::mul(S::max(s2, S::sub(zero, s2)), nk2));
                    const V t = S::div(S::sub(one, e), S::add(one, e));
                    const V nt = S::sub(zero, t);
                    const V lo = S::sub(zero, S::max(S::sub(zero, S::mul(s2, k4)), nt));  // min(s2 4/c, t)
                    S::store(ST + jj * BQ + v * W, S::mul(c2, S::max(lo, nt)));
                }
        }
        // ALiBi: s2 −= m_h log2 e · |p_i − j|, p_i = qpos0 + i0 + lane (exact in float below 2^24)
        if (a.alibi2 != nullptr) {
            const V neg_m2 = S::set1(-a.alibi2[it.h]);
            for (int jj = 0; jj < nk; ++jj) {
                const float base = static_cast<float>(a.qpos0 + it.i0 - (j0 + jj));
                for (int v = 0; v < NV; ++v) {
                    const V d = S::add(S::set1(base), S::load(lane_index() + v * W));
                    const V dist = S::max(d, S::sub(S::zero(), d));
                    S::store(ST + jj * BQ + v * W, S::fmadd(neg_m2, dist, S::load(ST + jj * BQ + v * W)));
                }
            }
        }
    }

    // pass 3a: masks, element-wise where they must be
    [[gnu::always_inline]] static inline void apply_masks(const Args& a, const Item& it, int64_t j0, int nk) {
        const MaskRow& mask = it.mask;
        const int64_t i0 = it.i0;
        const int nq = it.nq;
        float* ST = it.ST;
        if (mask.additive != nullptr)
            for (int jj = 0; jj < nk; ++jj)
                for (int i = 0; i < nq; ++i)
                    ST[jj * BQ + i] += mask.additive[(i0 + i) * mask.additive_stride + j0 + jj] * kLog2e;
        if (mask.causal && j0 + nk - 1 > i0)  // some key after some query: lanes i < j are masked
            for (int jj = 0; jj < nk; ++jj) {
                const int64_t upto = std::min<int64_t>(BQ, std::max<int64_t>(0, j0 + jj - i0));
                std::fill(ST + jj * BQ, ST + jj * BQ + upto, a.fill2);
            }
        if (mask.sparse && !mask.sparse_allows_all(i0, it.last_q, j0, j0 + nk - 1))
            mask_sparse(mask, i0, nq, j0, nk, ST, a.fill2);
        if (j0 + nk > mask.key_len)
            for (int jj = static_cast<int>(mask.key_len - j0); jj < nk; ++jj)
                std::fill(ST + jj * BQ, ST + (jj + 1) * BQ, a.fill2);
        if (mask.dense != nullptr)
            for (int jj = 0; jj < nk; ++jj)
                for (int i = 0; i < nq; ++i)
                    if (!mask.dense[(i0 + i) * mask.dense_stride + j0 + jj]) ST[jj * BQ + i] = a.fill2;
    }

    // pass 3b: online softmax. m_new = max(m, max_j s); alpha = 2^(m - m_new);
    // P = 2^(s - m_new); l = alpha l + sum_j P. A lane whose max is still -inf
    // (nothing allowed so far, fill -inf) uses 0 instead, so P = 0 and no NaN.
    // Loops run over keys outside and over CH vectors inside: CH independent max
    // and sum chains (a single chain is bound by vmaxps/vaddps latency, 4 cycles
    // per key, which profiling showed as ~1/4 of the time outside the GEMMs).
    // The reference point m is lazy: a group of CH vectors moves it only when some
    // lane's block maximum exceeds it by more than kLazyGrow (log2 units), so P <=
    // 2^kLazyGrow; float32 holds that with the same relative precision, and OT, l
    // and the log-sum-exp (m + log2 l) all refer to the same m. After the first block
    // m rarely moves, and a block where no group moved it skips pass 4's rescale of
    // OT (alpha = 1 exactly): one multiply per accumulator and block.
    // Returns whether some group moved its reference point in this block.
    [[gnu::always_inline]] static inline bool online_softmax(const Args& a, const Item& it, int64_t j0, int nk) {
        const int64_t Dv = a.Dv;
        float *ST = it.ST, *m = it.m, *l = it.l, *alpha = it.alpha;
        constexpr int CH = NV < 4 ? NV : 4;
        static_assert(NV % CH == 0);
        bool rescale = false;  // some group moved its reference point in this block
        // the key block's V rows, for prefetch_v_row (bf16: rows of pairs of keys)
        const void* v_block = it.vv + j0 * Dv;
        if constexpr (BF16) v_block = reinterpret_cast<const uint32_t*>(a.vb) + (it.bh * it.Tk2 + j0 / 2) * Dv;
        for (int v0 = 0; v0 < NV; v0 += CH) {
            // The block maximum in two chains per vector (even and odd keys): one chain of
            // vmaxps per vector is bound by its 4-cycle latency (4 cycles a key), which
            // perf showed as the 1.6% this pass took (AVX2 and AVX-512 alike).
            V mold[CH], mx[CH], mx2[CH], muse[CH], sum[CH];
            for (int c = 0; c < CH; ++c) mx2[c] = mx[c] = mold[c] = S::load(m + (v0 + c) * W);
            int jm = 0;
            for (; jm + 1 < nk; jm += 2)
                for (int c = 0; c < CH; ++c) {
                    mx[c] = S::max(mx[c], S::load(ST + jm * BQ + (v0 + c) * W));
                    mx2[c] = S::max(mx2[c], S::load(ST + (jm + 1) * BQ + (v0 + c) * W));
                }
            if (jm < nk)
                for (int c = 0; c < CH; ++c) mx[c] = S::max(mx[c], S::load(ST + jm * BQ + (v0 + c) * W));
            for (int c = 0; c < CH; ++c) mx[c] = S::max(mx[c], mx2[c]);
            // grow: some lane's maximum rose more than kLazyGrow over m. The rise is +inf
            // where m is still -inf and the block has a finite score, NaN (no growth)
            // where both are -inf or the block has a NaN score; every lane is compared on
            // its own, since a vector max would let a NaN hide another lane's rise.
            alignas(64) float rl[CH * W];
            for (int c = 0; c < CH; ++c) S::store(rl + c * W, S::sub(mx[c], mold[c]));
            int grows = 0;
            for (int i = 0; i < CH * W; ++i) grows |= rl[i] > kLazyGrow ? 1 : 0;
            const bool grow = grows != 0;
            rescale = rescale || grow;
            for (int c = 0; c < CH; ++c) {
                if (grow) {
                    S::store(m + (v0 + c) * W, mx[c]);
                    muse[c] = S::finite_or_zero(mx[c]);
                    S::store(alpha + (v0 + c) * W, S::exp2(S::sub(mold[c], muse[c])));
                } else {
                    muse[c] = S::finite_or_zero(mold[c]);
                    S::store(alpha + (v0 + c) * W, S::set1(1.0f));
                }
                sum[c] = S::zero();
            }
            for (int j = 0; j < nk; ++j) {
                prefetch_v_row(v_block, j, Dv, v0 / CH, NV / CH);  // pass 4's operand, on its way
                for (int c = 0; c < CH; ++c) {
                    float* sp = ST + j * BQ + (v0 + c) * W;
                    const V p = S::exp2(S::sub(S::load(sp), muse[c]));
                    sum[c] = S::add(sum[c], p);
                    S::store(sp, p);
                }
            }
            for (int c = 0; c < CH; ++c) {  // alpha = 1 exactly where the point stayed: l + sum
                float* lp = l + (v0 + c) * W;
                S::store(lp, S::fmadd(S::load(lp), S::load(alpha + (v0 + c) * W), sum[c]));
            }
        }
        return rescale;
    }

    // pass 3c: dropout on the weights (after the sum: l normalises the
    // undropped softmax, as the reference drops after softmax), kept ones x 1/(1-p)
    [[gnu::always_inline]] static inline void drop_weights(const Args& a, const Item& it, int64_t j0, int nk) {
        const float keep_scale = 1.0f / (1.0f - a.drop_p);
        for (int jj = 0; jj < nk; ++jj)
            for (int i = 0; i < it.nq; ++i) {
                const uint64_t flat = static_cast<uint64_t>((it.bh * a.Tq + it.i0 + i) * a.Tk + j0 + jj);
                float& p = it.ST[jj * BQ + i];
                p = dropout_drops(a.seed, flat, a.drop_p) ? 0.0f : p * keep_scale;
            }
    }

    // pass 4: OT = alpha OT + V_blk^T P (alpha only when `rescale`: some reference point moved)
    [[gnu::always_inline]] static inline void accumulate_pv(const Args& a, const Item& it, int64_t j0, int nk,
                                                            bool rescale) {
        const int64_t Dv = a.Dv;
        float *ST = it.ST, *OT = it.OT;
        if constexpr (BF16) {
            // P rows (2jp, 2jp+1) -> one row of bf16 pairs; an odd last row pairs with 0
            uint32_t* PT2 = it.PT2;
            const int np = (nk + 1) / 2;
            if (nk % 2 == 1) std::fill(ST + nk * BQ, ST + (nk + 1) * BQ, 0.0f);
            for (int jp = 0; jp < np; ++jp)
                for (int v = 0; v < NV; ++v)
                    S::pack_pairs(PT2 + jp * BQ + v * W, S::load(ST + 2 * jp * BQ + v * W),
                                  S::load(ST + (2 * jp + 1) * BQ + v * W));
            const uint32_t* vbp = reinterpret_cast<const uint32_t*>(a.vb) + (it.bh * it.Tk2 + j0 / 2) * Dv;
            for (int v0 = 0; v0 < NV; v0 += NT) {
                const int64_t o = v0 * W;
                int64_t e = 0;
                const float* al = rescale ? it.alpha + o : nullptr;
                for (; e + RP <= Dv; e += RP) pv_tile_bf16<RP>(vbp + e, PT2 + o, OT + e * BQ + o, al, np, Dv);
                if (e < Dv)
                    pv_rest_bf16<RP - 1>(static_cast<int>(Dv - e), vbp + e, PT2 + o, OT + e * BQ + o, al, np, Dv);
            }
        } else {
            if constexpr (ROUND)
                for (int jj = 0; jj < nk; ++jj)
                    for (int v = 0; v < NV; ++v)
                        S::store(ST + jj * BQ + v * W, S::round_bf16(S::load(ST + jj * BQ + v * W)));
            const float* vp = it.vv + j0 * Dv;
            for (int v0 = 0; v0 < NV; v0 += NT) {
                const int64_t o = v0 * W;
                int64_t e = 0;
                const float* al = rescale ? it.alpha + o : nullptr;
                for (; e + RP <= Dv; e += RP) pv_tile<RP>(vp + e, ST + o, OT + e * BQ + o, al, nk, Dv);
                if (e < Dv) pv_rest<RP - 1>(static_cast<int>(Dv - e), vp + e, ST + o, OT + e * BQ + o, al, nk, Dv);
            }
        }
    }

    // pass 5: out = OT^T / l; a row with l = 0 (fully masked, fill -inf) is 0
    // pass 6 (when asked, for the backward): L = ln sum_j e^{s_j} = (m + log2 l) ln 2,
    // the masked scaled scores s in natural units; -inf for a row with no weight.
    [[gnu::always_inline]] static inline void finish_item(const Args& a, const Item& it) {
        const int64_t Dv = a.Dv;
        const float *l = it.l, *m = it.m;
        for (int i = 0; i < it.nq; ++i) {
            const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
            for (int64_t e = 0; e < Dv; ++e) it.out[i * Dv + e] = it.OT[e * BQ + i] * inv;
        }
        if (a.lse != nullptr) {
            float* lse = a.lse + it.bh * a.Tq + it.i0;
            for (int i = 0; i < it.nq; ++i) lse[i] = l[i] > 0.0f ? (m[i] + std::log2(l[i])) * kLn2 : kNegInf;
        }
    }

    // One item: pass 1, then per key block (in the order below) the scores, masks, online softmax,
    // dropout and P·V; then pass 5 (and 6).
    static void run_item(const Args& a, int64_t item, float* ws) {
        const Item it = setup_item(a, item, ws);
        load_q_block(a, it);
        const MaskRow& mask = it.mask;
        const int64_t i0 = it.i0, last_q = it.last_q, Tk = a.Tk;
        // With fill -inf a masked key weighs exactly 0, so the blocks before the band's
        // first key (MaskRow::key_begin, 0 without a sparse band) are skipped outright.
        const int64_t j_first = a.fill_ninf ? mask.key_begin(i0) / BK * BK : 0;
        // With fill -inf the blocks from key_end(last_q) on are never visited either, and the
        // rest may run in any order (the online softmax's result does not depend on it, up to
        // rounding): odd query blocks run their key blocks last to first. A head's K and V
        // (2 MiB at T 4096, Dk 64) fill a core's L2, and swept in the same order by every
        // query block they missed it throughout; swept back and forth, each query block
        // starts on the rows the one before it ended on, still in L2. The order depends only
        // on the item, so the numbers do not depend on the threads.
        const int64_t key_end = mask.key_end(last_q);
        const int64_t j_stop = a.fill_ninf ? std::min(Tk, key_end) : Tk;
        const int64_t nblk = j_stop > j_first ? (j_stop - j_first + BK - 1) / BK : 0;
        const bool backwards = a.fill_ninf && it.qb % 2 == 1;
        for (int64_t t = 0; t < nblk; ++t) {
            const int64_t j0 = j_first + (backwards ? nblk - 1 - t : t) * BK;
            int nk = static_cast<int>(std::min<int64_t>(BK, Tk - j0));
            const bool past_end = j0 >= key_end;  // never, with fill -inf (j_stop)
            // With fill -inf the keys from key_end(last_q) on weigh exactly 0 for every
            // query of the block, so the block stops there: a causal diagonal block then
            // computes up to the block's last query, not BK keys (up to half a block less).
            if (a.fill_ninf && !past_end) nk = static_cast<int>(std::min<int64_t>(nk, key_end - j0));
            if (past_end || (mask.sparse && !mask.any_allowed(i0, last_q, j0, j0 + nk - 1))) {
                const Masked what = masked_block(a, it, nk, past_end);
                if (what == Masked::stop) break;
                if (what == Masked::skip) continue;
            } else {
                block_scores(a, it, j0, nk);
                softcap_and_alibi(a, it, j0, nk);
                apply_masks(a, it, j0, nk);
            }
            const bool rescale = online_softmax(a, it, j0, nk);
            if (a.dropout) drop_weights(a, it, j0, nk);
            accumulate_pv(a, it, j0, nk, rescale);
        }
        finish_item(a, it);
    }
};

}  // namespace
}  // namespace attn::flash_detail
