// lib/cpu/src/flash_amx.cpp: the bf16 flash forward on Intel AMX tiles.
//
// Same inputs, masks, scales, dropout and rounding as flash_bf16.cpp (Q, K, V and
// the softmax weights P rounded to bfloat16, every product accumulated in float32,
// the online softmax in float32), but the two GEMMs per (query block, key block)
// run on the tile unit: one TDPBF16PS multiplies a 16 x 32 bf16 tile by a
// 32 x 16 bf16 tile into a 16 x 16 float32 tile, 16 x 16 x 32 multiply-adds in
// one instruction. The softmax bookkeeping stays in AVX-512.
//
// Layout: rows are QUERIES here (the tile unit's A operand is row-major), so the
// block's scores S are [BQ][BK] float32 and each query's max and sum are
// horizontal reductions over its row, once per key block.
//   Qb  [BQ][DkP] bf16       the query block times scale*log2(e) (cosine: normalised)
//   S   [BQ][BK]  float32    scores, tile-stored from the accumulators
//   Pb  [BQ][BK]  bf16       2^(s - m), the A operand of P.V
//   O   [BQ][DvP] float32    the running un-normalised output, rescaled in AVX-512
// K and V are packed once per call (pack_kv) into the B-operand ("VNNI") layout:
// a B tile is 16 rows of 16 pairs, row p holding the pair (2p, 2p+1) along the
// contracted dimension for each of 16 output columns.
//   Kp  per (b, h): [TkP/16 key tiles][DkP/32 dim chunks][16 dim pairs][16 keys][2]
//   Vp  per (b, h): [TkP/32 key chunks][DvP/16 dim tiles][16 key pairs][16 dims][2]
// DkP, DvP: Dk and Dv rounded up to 32 (zero padding adds nothing to a product);
// TkP: Tk rounded up to the key block (zero keys, masked by the block's length).
//
// Linux hands out the tile registers only on request: arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA), asked once per process (amx_usable); without it the first
// tile instruction kills the process with SIGILL, so a refusal means "no AMX" and
// flash.cpp falls back to the AVX-512 BF16 kernel. Each work item loads the tile
// configuration itself (parallel_for may run it on a fresh thread) and releases it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "flash_args.hpp"

// GCC 12 or later on x86-64 Linux only: clang 14 ignores `#pragma GCC target` (as
// for flash_bf16.cpp, it defines __GNUC__ as 4), and the permission call is Linux's.
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12 && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace attn::flash_detail {
namespace {

// CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; the OS must also enable the
// tile state in XCR0 (bit 17 XTILECFG, bit 18 XTILEDATA) and grant this process
// the tile data (arch_prctl). Asked once; the answer holds for every thread.
bool amx_check() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    if (((d >> 22) & 1u) == 0 || ((d >> 24) & 1u) == 0) return false;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0 || ((c >> 27) & 1u) == 0) return false;  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const uint64_t xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    if ((xcr0 & (3ull << 17)) != (3ull << 17)) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

// Compiled for the default target (above the pragma): it runs on any CPU.
bool amx_bf16_usable() {
    static const bool ok = amx_check();
    return ok;
}

}  // namespace attn::flash_detail

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,avx2,fma,amx-tile,amx-bf16")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx512_traits.hpp"

namespace attn::flash_detail {
namespace {

constexpr int kTileRows = 16;  // rows of every tile used here
constexpr int kTileBytes = 64; // bytes per tile row: 16 float32 or 32 bf16

// The 64-byte tile configuration: palette 1, tiles 0..7 all 16 rows x 64 bytes.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
TileConfig tile_config() {
    TileConfig c;
    for (int t = 0; t < 8; ++t) c.colsb[t] = kTileBytes, c.rows[t] = kTileRows;
    return c;
}

// 2^x for x <= 0, as Avx512::exp2 (flash_avx512_traits.hpp) but with a degree-4
// polynomial for 2^f on |f| <= 1/2: relative error < 3e-6 (weighted least squares
// on 2000 Chebyshev nodes, coefficients rounded to float32, error checked on a
// 2e5-point grid), far below the 2^-9 to which P is then rounded, and two FMAs
// fewer per 16 weights than the float32 kernel's degree 6 (< 2e-7).
inline __m512 exp2_bf16(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-160.0f), x);
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(0.009560510516166687f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.05591703951358795f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24024981260299683f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931219696998596f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.9999991655349731f));
    return _mm512_scalef_ps(p, n);
}

// float32 [16] -> bf16 [16], round to nearest even (vcvtneps2bf16).
inline __m256i cvt16(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

struct Packed {
    int64_t DkP = 0, DvP = 0, TkP = 0;
    std::unique_ptr<uint16_t[]> k, v;  // Kp and Vp for every (b, h), see the top of the file
};

// 16 floats from x[0 .. n) (n may be <= 0 or above 16), zero beyond, times f.
inline __m512 load16(const float* x, int64_t n, float f) {
    if (n >= 16) return _mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(f));
    if (n <= 0) return _mm512_setzero_ps();
    const auto m = static_cast<__mmask16>((1u << n) - 1u);
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), _mm512_set1_ps(f));
}

// K and V to bf16 in the tile layout, once per call (the kernel reads them
// Tq/BQ times); every element of the buffers, padding included, is written here.
// Cosine scaling divides each key row by its norm here.
Packed pack_kv(const Args& a, int64_t BK, int threads) {
    Packed p;
    p.DkP = (a.Dk + 31) / 32 * 32;
    p.DvP = (a.Dv + 31) / 32 * 32;
    p.TkP = (a.Tk + BK - 1) / BK * BK;
    const int64_t kper = p.TkP * p.DkP, vper = p.TkP * p.DvP;
    const int64_t BH = a.B * a.H;
    p.k.reset(new uint16_t[static_cast<size_t>(BH * kper)]);
    p.v.reset(new uint16_t[static_cast<size_t>(BH * vper)]);
    const int64_t nkc = p.DkP / 32, nvt = p.DvP / 16;
    // bf16 pairs of two 16-float rows: lane i = bf16(even[i]) | bf16(odd[i]) << 16
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    parallel_for(BH, threads, [&](int64_t bh, int) {
        const float* ks = a.k + bh * a.Tk * a.Dk;
        uint16_t* kd = p.k.get() + bh * kper;
        alignas(64) uint32_t rows[16][16];  // [key][dim pair] of one tile, before the transpose
        for (int64_t kt = 0; kt < p.TkP / 16; ++kt)
            for (int64_t c = 0; c < nkc; ++c) {
                for (int n = 0; n < 16; ++n) {
                    const int64_t j = kt * 16 + n;
                    __m512i pairs = _mm512_setzero_si512();
                    if (j < a.Tk) {
                        const float* x = ks + j * a.Dk;
                        const float f = a.cosine ? inv_norm(x, a.Dk) : 1.0f;
                        const int64_t d0 = c * 32;
                        // 32 dims in order = 16 pairs (2p, 2p+1) as 32-bit lanes
                        pairs = (__m512i)_mm512_cvtne2ps_pbh(load16(x + d0 + 16, a.Dk - d0 - 16, f),
                                                             load16(x + d0, a.Dk - d0, f));
                    }
                    _mm512_store_si512(rows[n], pairs);
                }
                uint32_t* tile = reinterpret_cast<uint32_t*>(kd + (kt * nkc + c) * 512);
                for (int pr = 0; pr < 16; ++pr)
                    for (int n = 0; n < 16; ++n) tile[pr * 16 + n] = rows[n][pr];
            }
        const float* vs = a.v + bh * a.Tk * a.Dv;
        uint16_t* vd = p.v.get() + bh * vper;
        for (int64_t kc = 0; kc < p.TkP / 32; ++kc)
            for (int64_t et = 0; et < nvt; ++et)
                for (int pr = 0; pr < 16; ++pr) {
                    const int64_t j = kc * 32 + 2 * pr, e0 = et * 16;
                    const __m512 even = j < a.Tk ? load16(vs + j * a.Dv + e0, a.Dv - e0, 1.0f) : _mm512_setzero_ps();
                    const __m512 odd =
                        j + 1 < a.Tk ? load16(vs + (j + 1) * a.Dv + e0, a.Dv - e0, 1.0f) : _mm512_setzero_ps();
                    const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(odd, even);  // [even 0..15 | odd 0..15]
                    _mm512_storeu_si512(vd + ((kc * nvt + et) * 16 + pr) * 32, _mm512_permutexvar_epi16(interleave, both));
                }
    });
    return p;
}

// BQ queries (a multiple of 32: pairs of row tiles) by BK keys (a multiple of 32).
template <int BQ, int BK>
struct FlashAmx {
    static_assert(BQ % 32 == 0 && BK % 32 == 0, "blocks are pairs of 16-row tiles");
    static constexpr int kVec = BK / 16;  // float32 vectors per score row

    static size_t workspace_bytes(const Packed& p) {
        const size_t b = static_cast<size_t>(BQ) * static_cast<size_t>(2 * p.DkP + 4 * BK + 2 * BK + 4 * p.DvP) +
                         3 * BQ * 4 + 5 * 64;
        return (b + 63) / 64 * 64;
    }

    // S[BQ][BK] = Qb[BQ][DkP] . K block^T: 2 x 2 accumulator tiles (rows r, r+16 x
    // keys c, c+16), each step loading two Q tiles and two K tiles for four products.
    static void scores(const uint16_t* Qb, const uint16_t* kp, float* S, int64_t DkP, int ntk) {
        const int nkc = static_cast<int>(DkP / 32);
        const size_t qstride = static_cast<size_t>(DkP) * 2, sstride = BK * 4;
        for (int r = 0; r < BQ; r += 32)
            for (int c = 0; c < ntk; c += 2) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                for (int kc = 0; kc < nkc; ++kc) {
                    _tile_loadd(4, Qb + r * DkP + kc * 32, qstride);
                    _tile_loadd(5, Qb + (r + 16) * DkP + kc * 32, qstride);
                    _tile_loadd(6, kp + (static_cast<int64_t>(c) * nkc + kc) * 512, kTileBytes);
                    _tile_loadd(7, kp + (static_cast<int64_t>(c + 1) * nkc + kc) * 512, kTileBytes);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, S + r * BK + c * 16, sstride);
                _tile_stored(1, S + r * BK + (c + 1) * 16, sstride);
                _tile_stored(2, S + (r + 16) * BK + c * 16, sstride);
                _tile_stored(3, S + (r + 16) * BK + (c + 1) * 16, sstride);
            }
    }

    // O[BQ][DvP] += Pb[BQ][BK] . V block, over the first nkc 32-key chunks.
    static void pv(const uint16_t* Pb, const uint16_t* vp, float* O, int64_t DvP, int nkc) {
        const int nvt = static_cast<int>(DvP / 16);
        const size_t ostride = static_cast<size_t>(DvP) * 4, pstride = BK * 2;
        for (int r = 0; r < BQ; r += 32)
            for (int et = 0; et < nvt; et += 2) {
                float* o = O + r * DvP + et * 16;
                _tile_loadd(0, o, ostride);
                _tile_loadd(1, o + 16, ostride);
                _tile_loadd(2, o + 16 * DvP, ostride);
                _tile_loadd(3, o + 16 * DvP + 16, ostride);
                for (int kc = 0; kc < nkc; ++kc) {
                    _tile_loadd(4, Pb + r * BK + kc * 32, pstride);
                    _tile_loadd(5, Pb + (r + 16) * BK + kc * 32, pstride);
                    _tile_loadd(6, vp + (static_cast<int64_t>(kc) * nvt + et) * 512, kTileBytes);
                    _tile_loadd(7, vp + (static_cast<int64_t>(kc) * nvt + et + 1) * 512, kTileBytes);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, o, ostride);
                _tile_stored(1, o + 16, ostride);
                _tile_stored(2, o + 16 * DvP, ostride);
                _tile_stored(3, o + 16 * DvP + 16, ostride);
            }
    }

    static void run_item(const Args& a, const Packed& p, int64_t item, unsigned char* ws) {
        const int64_t nqb = (a.Tq + BQ - 1) / BQ;
        const int64_t bh = item / nqb;
        const int64_t qb = nqb - 1 - item % nqb;  // reversed: costly causal blocks first
        const int64_t b = bh / a.H;
        const int64_t i0 = qb * BQ;
        const int nq = static_cast<int>(std::min<int64_t>(BQ, a.Tq - i0));
        const int64_t Dk = a.Dk, Dv = a.Dv, Tk = a.Tk, DkP = p.DkP, DvP = p.DvP;
        const float* q = a.q + (bh * a.Tq + i0) * Dk;
        float* out = a.out + (bh * a.Tq + i0) * Dv;
        const uint16_t* kp = p.k.get() + bh * p.TkP * DkP;
        const uint16_t* vp = p.v.get() + bh * p.TkP * DvP;

        auto* Qb = reinterpret_cast<uint16_t*>(ws);          // [BQ][DkP]
        auto* S = reinterpret_cast<float*>(Qb + BQ * DkP);    // [BQ][BK]
        auto* Pb = reinterpret_cast<uint16_t*>(S + BQ * BK);  // [BQ][BK]
        auto* O = reinterpret_cast<float*>(Pb + BQ * BK);     // [BQ][DvP]
        float* m = O + BQ * DvP;                              // [BQ]
        float* l = m + BQ;                                    // [BQ]
        float* alpha = l + BQ;                                // [BQ]

        // the query block, scaled, to bf16; padding rows and dims 0; state reset
        std::memset(Qb, 0, sizeof(uint16_t) * static_cast<size_t>(BQ * DkP));
        for (int i = 0; i < nq; ++i) {
            const float f = a.qscale * (a.cosine ? inv_norm(q + i * Dk, Dk) : 1.0f);
            for (int64_t d = 0; d < Dk; ++d) Qb[i * DkP + d] = to_bf16(q[i * Dk + d] * f);
        }
        std::memset(Pb, 0, sizeof(uint16_t) * static_cast<size_t>(BQ * BK));  // rows >= nq stay 0
        std::memset(O, 0, sizeof(float) * static_cast<size_t>(BQ * DvP));
        for (int i = 0; i < BQ; ++i) m[i] = kNegInf, l[i] = 0.0f, alpha[i] = 1.0f;

        const TileConfig cfg = tile_config();
        _tile_loadconfig(&cfg);

        const MaskRow mask = a.mask->row(b, bh % a.H, Tk);  // per-head masks: this head's row
        const int64_t last_q = i0 + nq - 1;
        for (int64_t j0 = 0; j0 < Tk; j0 += BK) {
            int nk = static_cast<int>(std::min<int64_t>(BK, Tk - j0));
            // With fill -inf the keys from key_end(last query) on weigh exactly 0 for
            // every query of the block: a block crossing the causal diagonal (or the
            // padding) stops there, in whole 32-key chunks of the tiles.
            if (a.fill_ninf && j0 < mask.key_end(last_q))
                nk = static_cast<int>(std::min<int64_t>(nk, mask.key_end(last_q) - j0));
            if (j0 >= mask.key_end(last_q)) {
                // Every later key is masked for every query of the block (as in
                // flash_kernel.hpp): nothing more with fill -inf or once the fill's
                // weight 2^(fill2 - m) is exactly 0 in float32; otherwise keys
                // whose score is the fill.
                if (a.fill_ninf) break;
                bool negligible = true;
                for (int i = 0; i < nq; ++i) negligible = negligible && (m[i] - a.fill2 > 160.0f);
                if (negligible) break;
                for (int i = 0; i < nq; ++i) std::fill(S + i * BK, S + i * BK + nk, a.fill2);
            } else {
                scores(Qb, kp + (j0 / 16) * (DkP / 32) * 512, S, DkP, (nk + 31) / 32 * 2);
                // masks, row by row, where they apply to this block
                const bool diag = mask.causal && j0 + nk - 1 > i0;
                if (mask.additive != nullptr || diag || j0 + nk > mask.key_len || mask.dense != nullptr)
                    for (int i = 0; i < nq; ++i) {
                        float* s = S + i * BK;
                        const int64_t qi = i0 + i;
                        if (mask.additive != nullptr)
                            for (int jj = 0; jj < nk; ++jj) s[jj] += mask.additive[qi * mask.additive_stride + j0 + jj] * kLog2e;
                        if (diag && j0 + nk - 1 > qi)  // keys j > qi
                            std::fill(s + std::max<int64_t>(0, qi + 1 - j0), s + nk, a.fill2);
                        if (j0 + nk > mask.key_len) std::fill(s + std::max<int64_t>(0, mask.key_len - j0), s + nk, a.fill2);
                        if (mask.dense != nullptr)
                            for (int jj = 0; jj < nk; ++jj)
                                if (!mask.dense[qi * mask.dense_stride + j0 + jj]) s[jj] = a.fill2;
                    }
            }
            softmax_block(a, S, Pb, O, m, l, alpha, nq, nk, DvP, bh, i0, j0);
            pv(Pb, vp + (j0 / 32) * (DvP / 16) * 512, O, DvP, (nk + 31) / 32);
        }
        _tile_release();

        // out = O / l; a row with l = 0 (fully masked, fill -inf) is 0
        for (int i = 0; i < nq; ++i) {
            const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
            for (int64_t e = 0; e < Dv; ++e) out[i * Dv + e] = O[i * DvP + e] * inv;
        }
    }

    // The online softmax of one key block, rows < nq, keys < nk (S -> Pb, m, l, O rescaled):
    // m_new = max(m, max_j s); alpha = 2^(m - m_new); P = 2^(s - m_new); l = alpha l + sum_j P.
    // A row whose max is still -inf (nothing allowed yet, fill -inf) uses 0 instead, so P = 0.
    // Pb columns nk .. (the block's last 32-key chunk) are 0.
    static void softmax_block(const Args& a, const float* S, uint16_t* Pb, float* O, float* m, float* l,
                              float* alpha, int nq, int nk, int64_t DvP, int64_t bh, int64_t i0, int64_t j0) {
        const int nvec = (nk + 15) / 16;
        const __mmask16 tail = nk % 16 == 0 ? static_cast<__mmask16>(0xffff)
                                            : static_cast<__mmask16>((1u << (nk % 16)) - 1u);
        const __m512 ninf = _mm512_set1_ps(kNegInf);
        for (int i = 0; i < nq; ++i) {
            const float* s = S + i * BK;
            __m512 mx = _mm512_set1_ps(m[i]);
            for (int v = 0; v < nvec; ++v) {
                const __m512 x = v + 1 < nvec ? _mm512_loadu_ps(s + 16 * v) : _mm512_mask_loadu_ps(ninf, tail, s + 16 * v);
                mx = _mm512_max_ps(mx, x);
            }
            const float mnew = _mm512_reduce_max_ps(mx);
            const float muse = std::isinf(mnew) && mnew < 0 ? 0.0f : mnew;
            const float mold = m[i];
            m[i] = mnew;
            // alpha: 2^(mold - muse) (mold = -inf gives 0); only the first lane matters
            const float al = _mm512_cvtss_f32(exp2_bf16(_mm512_set1_ps(mold - muse)));
            alpha[i] = al;
            const __m512 mu = _mm512_set1_ps(muse);
            __m512 sum = _mm512_setzero_ps();
            uint16_t* pb = Pb + i * BK;
            __m512 pk[kVec];
            for (int v = 0; v < nvec; ++v) {
                const __m512 x = v + 1 < nvec ? _mm512_loadu_ps(s + 16 * v) : _mm512_mask_loadu_ps(ninf, tail, s + 16 * v);
                pk[v] = exp2_bf16(_mm512_sub_ps(x, mu));  // masked-off tail lanes: 2^-inf = 0
                sum = _mm512_add_ps(sum, pk[v]);
            }
            l[i] = l[i] * al + _mm512_reduce_add_ps(sum);
            if (a.dropout) {
                // after the sum: l normalises the undropped softmax, as the reference drops after softmax
                const float keep_scale = 1.0f / (1.0f - a.drop_p);
                alignas(64) float tmp[BK];
                for (int v = 0; v < nvec; ++v) _mm512_store_ps(tmp + 16 * v, pk[v]);
                for (int jj = 0; jj < nk; ++jj) {
                    const uint64_t flat = static_cast<uint64_t>((bh * a.Tq + i0 + i) * a.Tk + j0 + jj);
                    tmp[jj] = dropout_drops(a.seed, flat, a.drop_p) ? 0.0f : tmp[jj] * keep_scale;
                }
                for (int v = 0; v < nvec; ++v) pk[v] = _mm512_load_ps(tmp + 16 * v);
            }
            for (int v = 0; v < nvec; ++v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb + 16 * v), cvt16(pk[v]));
            // zero the rest of the last 32-key chunk (an odd vector count, a block shorter than BK)
            if (nvec % 2 == 1) _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb + 16 * nvec), _mm256_setzero_si256());
            if (al != 1.0f) {
                float* o = O + i * DvP;
                const __m512 alv = _mm512_set1_ps(al);
                for (int64_t e = 0; e < DvP; e += 16) _mm512_storeu_ps(o + e, _mm512_mul_ps(_mm512_loadu_ps(o + e), alv));
            }
        }
    }

    static void run(const Args& a, int threads) {
        const Packed p = pack_kv(a, BK, threads);
        const int64_t nqb = (a.Tq + BQ - 1) / BQ;
        const int64_t items = a.B * a.H * nqb;
        if (items == 0) return;
        const int t = static_cast<int>(std::min<int64_t>(resolve_threads(threads), items));
        const size_t per = workspace_bytes(p);
        std::unique_ptr<unsigned char[]> raw(new unsigned char[per * static_cast<size_t>(t) + 64]);
        unsigned char* base = raw.get();
        while (reinterpret_cast<uintptr_t>(base) % 64 != 0) ++base;
        parallel_for(items, t, [&](int64_t item, int tid) { run_item(a, p, item, base + per * static_cast<size_t>(tid)); });
    }
};

}  // namespace

// Blocks: 64 queries (4 row tiles) x 128 keys (8 key tiles). Measured here
// (T = 1024 and 4096, 1 thread, interleaved runs, best of 5-15, the machine
// shared): BK 128 beat BK 64 by 10-20% (the per-row softmax bookkeeping and the
// O tile round trip are paid once per key block); BQ 32, 64, 128 were within the
// noise at BK 128, and 64 reads the packed K and V half as often as 32.
void run_amx_bf16(const Args& a, int threads) { FlashAmx<64, 128>::run(a, threads); }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
bool amx_bf16_usable() { return false; }
void run_amx_bf16(const Args&, int) {}
}  // namespace attn::flash_detail
#endif
