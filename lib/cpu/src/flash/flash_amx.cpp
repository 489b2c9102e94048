// lib/cpu/src/flash/flash_amx.cpp: the bf16 flash forward on Intel AMX tiles.
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
// reductions over its row.
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
// Where the time goes (T = 4096, Dk 64, 1 thread; each part timed alone by
// skipping the others in a scratch build): the softmax in AVX-512 about a third,
// the tile work about half (its rate is well under the tile unit's peak: at Dk 64
// each 16 x 16 score tile takes only two TDPBF16PS and then a 1 KiB tile store,
// and every key block loads and stores the O tiles), packing K and V, the query
// block and the output the rest. The work is split so that the tile unit's steps
// are issued between the softmax rows of the other row group (run_item), but on
// this processor the two overlapped little in measurements. What made it faster:
// a degree-3 exp2, no underflow assists, 256-key blocks, a lazy reference point
// that spares most rows the max pass and the O rescale (softmax), Q tiles kept
// resident (TileJob::step_resident), vector conversions of Q and P.
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
#include <new>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/amx_tiles.hpp"
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

static_assert(kTileRows == 16 && kTileBytes == 64, "the tiles of attn::amx_tiles_16x64()");

struct Packed {
    int64_t DkP = 0, DvP = 0, TkP = 0;
    struct Free {
        void operator()(uint16_t* x) const { std::free(x); }
    };
    std::unique_ptr<uint16_t[], Free> k, v;  // Kp and Vp for every (b, h), see the top of the file
};

// 16 floats from x[0 .. n) (n may be <= 0 or above 16), zero beyond, times f.
inline __m512 load16(const float* x, int64_t n, float f) {
    if (n >= 16) return _mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(f));
    if (n <= 0) return _mm512_setzero_ps();
    const auto m = static_cast<__mmask16>((1u << n) - 1u);
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), _mm512_set1_ps(f));
}

// n bf16 values on 64-byte lines. (Huge pages, tried: madvise(MADV_HUGEPAGE) made the
// packing time erratic here, up to 5x, from the kernel's compaction on the first touch.)
uint16_t* alloc_packed(size_t n) {
    void* x = std::aligned_alloc(64, (std::max<size_t>(n * 2, 64) + 63) / 64 * 64);
    if (x == nullptr) throw std::bad_alloc();
    return static_cast<uint16_t*>(x);
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
    p.k.reset(alloc_packed(static_cast<size_t>(BH * kper)));
    p.v.reset(alloc_packed(static_cast<size_t>(BH * vper)));
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
                    _mm512_storeu_si512(vd + ((kc * nvt + et) * 16 + pr) * 32,
                                        _mm512_permutexvar_epi16(interleave, both));
                }
    });
    return p;
}

// The tile work of one 32-query row group (two row tiles), cut into steps so that
// it can be issued a little at a time between the rows of the AVX-512 softmax of
// another row group (see run_item): the tile unit then multiplies while the vector
// units compute exponentials. One step is one 32-wide chunk of the contracted
// dimension for a 2 x 2 block of accumulators (four TDPBF16PS, 64 tile-unit
// cycles); the first step of a block zeroes or loads its accumulators, the last
// stores them.
//   Scores: S[32][ntk*16] = Qb rows . K block^T (contracted over DkP).
//   Values: O[32][DvP] += Pb rows . V block (contracted over the nk keys, 32 at a time).
// A job's steps use all eight tiles; two jobs never interleave with each other.
struct TileJob {
    enum Kind { kNone, kScores, kValues, kScoresQ } kind = kNone;
    const uint16_t* a = nullptr;  // Qb or Pb, row 0 of the group
    const uint16_t* b = nullptr;  // packed K or V block
    float* c = nullptr;           // S or O, row 0 of the group
    size_t astride = 0, cstride = 0;  // bytes
    int inner = 0;                // steps per accumulator block (contracted chunks)
    int nb = 0;                   // column tiles per B chunk (K: DkP/32 chunks per key tile; V: DvP/16 tiles)
    int cstep = 0;                // floats between column tiles of C
    int total = 0, done = 0;

    bool finished() const { return done >= total; }
    void step() {
        if (kind == kScoresQ) return step_resident();
        const int s = done++;
        const int col = (s / inner) * 2, kc = s % inner;  // column tiles col, col + 1; chunk kc
        float* c0 = c + static_cast<size_t>(col) * cstep;
        float* c1 = c0 + cstep;
        float* c2 = reinterpret_cast<float*>(reinterpret_cast<char*>(c0) + 16 * cstride);
        float* c3 = reinterpret_cast<float*>(reinterpret_cast<char*>(c1) + 16 * cstride);
        if (kc == 0) {
            if (kind == kScores) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
            } else {
                _tile_loadd(0, c0, cstride);
                _tile_loadd(1, c1, cstride);
                _tile_loadd(2, c2, cstride);
                _tile_loadd(3, c3, cstride);
            }
        }
        const uint16_t* a0 = a + kc * 32;
        _tile_loadd(4, a0, astride);
        _tile_loadd(5, reinterpret_cast<const char*>(a0) + 16 * astride, astride);
        // K: tile (key tile col, chunk kc) at (col * nb + kc) * 512; V: (chunk kc, dim tile col) at (kc * nb + col) *
        // 512
        const int64_t t0 = kind == kScores ? static_cast<int64_t>(col) * nb + kc : static_cast<int64_t>(kc) * nb + col;
        const int64_t t1 = kind == kScores ? t0 + nb : t0 + 1;
        _tile_loadd(6, b + t0 * 512, kTileBytes);
        _tile_loadd(7, b + t1 * 512, kTileBytes);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        if (kc == inner - 1) {
            _tile_stored(0, c0, cstride);
            _tile_stored(1, c1, cstride);
            _tile_stored(2, c2, cstride);
            _tile_stored(3, c3, cstride);
        }
    }
    void finish() {
        while (!finished()) step();
    }

    // Scores with DkP <= 64: the group's Q tiles (2 row tiles x inner <= 2 dim chunks)
    // stay in tiles 4..7 for the whole job, so a step (one key tile: 2 x inner
    // products into two accumulators) loads only the key tile's inner K tiles: half
    // the tile loads of the 2 x 2 scheme, where the contraction is this short.
    void step_resident() {
        const int s = done++;
        const char* a1 = reinterpret_cast<const char*>(a) + 16 * astride;
        if (s == 0) {
            _tile_loadd(4, a, astride);
            _tile_loadd(6, a1, astride);
            if (inner == 2) {
                _tile_loadd(5, a + 32, astride);
                _tile_loadd(7, a1 + 64, astride);
            }
        }
        float* c0 = c + static_cast<size_t>(s) * cstep;
        float* c1 = reinterpret_cast<float*>(reinterpret_cast<char*>(c0) + 16 * cstride);
        _tile_zero(0);
        _tile_zero(1);
        _tile_loadd(2, b + static_cast<int64_t>(s) * nb * 512, kTileBytes);
        _tile_dpbf16ps(0, 4, 2);
        _tile_dpbf16ps(1, 6, 2);
        if (inner == 2) {
            _tile_loadd(3, b + (static_cast<int64_t>(s) * nb + 1) * 512, kTileBytes);
            _tile_dpbf16ps(0, 5, 3);
            _tile_dpbf16ps(1, 7, 3);
        }
        _tile_stored(0, c0, cstride);
        _tile_stored(1, c1, cstride);
    }
};

// 2^x for x <= 0 with a degree-3 polynomial for 2^f on |f| <= 1/2: relative error
// < 7.5e-5 (weighted least squares on 4000 Chebyshev nodes, reweighted towards
// minimax; coefficients rounded to float32; error measured on a 2e5-point grid),
// under 4% of the 2^-9 (1.95e-3) by which rounding P to bfloat16 may move it anyway,
// and one FMA fewer than degree 4 (< 3e-6). The same function gives alpha, whose
// error cancels exactly: O and l are multiplied by the same alpha. Lanes below -126
// (-inf included) are exactly 0 by the write mask of vscalefps: an underflowing
// result costs a microcode assist on Intel cores (see Avx512::exp2), which the
// masked keys of every block on the causal diagonal would otherwise pay. NaN stays NaN.
inline __m512 exp2_bf16(__m512 x) {
    const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(0.0551716685295105f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2426111251115799f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6932609677314758f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.9999280571937561f));
    return _mm512_maskz_scalef_ps(normal, p, n);
}

// BQ queries (G = BQ/32 row groups of two row tiles, G >= 2) by BK keys (a multiple of 32).
template <int BQ, int BK>
struct FlashAmx {
    static_assert(BQ % 32 == 0 && BQ >= 64 && BK % 32 == 0,
                  "blocks are pairs of 16-row tiles, two row groups at least");
    static constexpr int kVec = BK / 16;  // float32 vectors per score row
    static constexpr int G = BQ / 32;     // row groups
    static constexpr float kSlack = 8.0f; // log2 units the block max may exceed a new reference m (see softmax)
    static constexpr float kMaxBlockSum = 65536.0f;  // 2^16: the most one lane may sum in a block without a max pass

    static size_t workspace_bytes(const Packed& p) {
        const size_t b = static_cast<size_t>(BQ) * static_cast<size_t>(2 * p.DkP + 4 * BK + 2 * BK + 4 * p.DvP) +
                         17 * BQ * 4 + 5 * 64;
        return (b + 63) / 64 * 64;
    }

    struct Block {
        int64_t j0 = 0;
        int nk = 0;
    };

    // Everything one work item (one query block of one head) reads and writes.
    struct Item {
        const Args* a = nullptr;
        const Packed* p = nullptr;
        MaskRow mask;
        int64_t bh = 0, i0 = 0;
        int nq = 0;
        uint16_t* Qb = nullptr;
        float* S = nullptr;
        uint16_t* Pb = nullptr;
        float* O = nullptr;
        float *m = nullptr, *l = nullptr;
        const uint16_t *kp = nullptr, *vp = nullptr;

        TileJob scores(int g, const Block& k) const {
            TileJob t;
            t.kind = TileJob::kScores;
            t.a = Qb + g * 32 * p->DkP;
            t.astride = static_cast<size_t>(p->DkP) * 2;
            t.b = kp + (k.j0 / 16) * (p->DkP / 32) * 512;
            t.c = S + g * 32 * BK;
            t.cstride = BK * 4;
            t.inner = static_cast<int>(p->DkP / 32);
            t.nb = t.inner;
            t.cstep = 16;
            t.total = (k.nk + 31) / 32 * t.inner;  // pairs of key tiles x dim chunks
            if (t.inner <= 2) t.kind = TileJob::kScoresQ, t.total = (k.nk + 31) / 32 * 2;  // key tiles
            return t;
        }
        TileJob values(int g, const Block& k) const {
            TileJob t;
            t.kind = TileJob::kValues;
            t.a = Pb + g * 32 * BK;
            t.astride = BK * 2;
            t.b = vp + (k.j0 / 32) * (p->DvP / 16) * 512;
            t.c = O + g * 32 * p->DvP;
            t.cstride = static_cast<size_t>(p->DvP) * 4;
            t.inner = (k.nk + 31) / 32;
            t.nb = static_cast<int>(p->DvP / 16);
            t.cstep = 16;
            t.total = t.nb / 2 * t.inner;  // pairs of dim tiles x key chunks
            return t;
        }

        // Masks on the score rows [r0, r1) of key block k, where any applies to it.
        void apply_masks(int r0, int r1, const Block& k) const {
            const int64_t j0 = k.j0;
            const int nk = k.nk;
            const bool diag = mask.causal && j0 + nk - 1 > i0 + r0;
            const bool pad = j0 + nk > mask.key_len;
            if (mask.additive == nullptr && !diag && !pad && mask.dense == nullptr && !mask.sparse) return;
            const float fill2 = a->fill2;
            for (int i = r0; i < std::min(r1, nq); ++i) {
                float* s = S + i * BK;
                const int64_t qi = i0 + i;
                if (mask.additive != nullptr)
                    for (int jj = 0; jj < nk; ++jj)
                        s[jj] += mask.additive[qi * mask.additive_stride + j0 + jj] * kLog2e;
                if (diag && j0 + nk - 1 > qi)  // keys j > qi
                    std::fill(s + std::max<int64_t>(0, qi + 1 - j0), s + nk, fill2);
                if (pad) std::fill(s + std::max<int64_t>(0, mask.key_len - j0), s + nk, fill2);
                if (mask.dense != nullptr)
                    for (int jj = 0; jj < nk; ++jj)
                        if (!mask.dense[qi * mask.dense_stride + j0 + jj]) s[jj] = fill2;
                if (mask.sparse)
                    for (int jj = 0; jj < nk; ++jj)
                        if (!mask.sparse_allows(qi, j0 + jj)) s[jj] = fill2;
            }
        }

        // The online softmax of rows [r0, r1) (those < nq) of key block k: S -> Pb, m, l,
        // O rescaled; between rows, steps of `job` (up to all of them by the last row).
        // m is each row's reference point, not its running max: P = 2^(s - m) and
        // l = sum P, O = sum P v as usual, but m moves (alpha = 2^(m_old - m_new) on l and
        // O) only at the row's first finite score and when a weight would pass 2^16: P
        // is computed against the current m with no max pass, and only where a lane of
        // the block's sums passes 2^16 (so possibly a weight) is the row done again with
        // the block's max, which becomes the reference if it passes m by more than
        // kSlack. So P <= 2^16, far inside float32 and bfloat16, and rounding P to bf16
        // is relative, so its error bound is that of a weight <= 1. The softmax is
        // unchanged (any reference point cancels in O / l); most rows skip the max pass,
        // the horizontal max, alpha and the O rescale. A row whose reference is still
        // -inf (nothing allowed yet, fill -inf) uses 0 instead, so P = 0. l is kept as 16
        // partial sums per row (added up at the end, in a fixed order). Pb columns nk ..
        // (the block's last 32-key chunk) are 0.
        void softmax(int r0, int r1, const Block& k, TileJob& job) const {
            const int rows = r1 - r0;
            for (int i = r0; i < r1; ++i) {
                // the tile job's share up to this row, spread evenly over the rows
                const int due = (job.total * (i - r0 + 1) + rows - 1) / rows;
                while (job.done < due) job.step();
                if (i >= nq) continue;
                if (k.nk == BK)
                    row<true>(i, k);
                else
                    row<false>(i, k);
            }
            job.finish();
        }

        // One row: Full (nk = BK) with every loop unrolled, so that the row stays in registers.
        template <bool Full>
        void row(int i, const Block& k) const {
            const int nk = k.nk;
            const int nvec = Full ? kVec : (nk + 15) / 16;
            const __mmask16 tail = Full || nk % 16 == 0 ? static_cast<__mmask16>(0xffff)
                                                        : static_cast<__mmask16>((1u << (nk % 16)) - 1u);
            const __m512 ninf = _mm512_set1_ps(kNegInf);
            const float* s = S + i * BK;
            auto load = [&](int v) {
                return Full || v + 1 < nvec ? _mm512_loadu_ps(s + 16 * v)
                                            : _mm512_mask_loadu_ps(ninf, tail, s + 16 * v);
            };
            float* li = l + i * 16;
            float mref = m[i];
            __m512 x[kVec];
            bool done = false;
            if (mref > kNegInf) {
                // A finite reference: the weights straight away, no max pass, checked after:
                // each lane of blk sums 16 weights, so all lanes <= 2^16 means every weight
                // is (and none is NaN or inf); otherwise the row is done again below.
                const __m512 mu = _mm512_set1_ps(mref);
                __m512 blk = _mm512_setzero_ps();
#pragma GCC unroll 16
                for (int v = 0; v < nvec; ++v) {
                    x[v] = exp2_bf16(_mm512_sub_ps(load(v), mu));  // masked-off tail lanes: 2^-inf = 0
                    blk = _mm512_add_ps(blk, x[v]);
                }
                if (_mm512_cmp_ps_mask(blk, _mm512_set1_ps(kMaxBlockSum), _CMP_NLE_UQ) == 0) {
                    _mm512_store_ps(li, _mm512_add_ps(_mm512_load_ps(li), blk));
                    done = true;
                }
            }
            if (!done) {
                // The row's first finite scores, or weights past 2^16: the block's max, and
                // a new reference where it passes the old one by more than kSlack.
                __m512 mx = _mm512_set1_ps(mref);
#pragma GCC unroll 16
                for (int v = 0; v < nvec; ++v) {
                    x[v] = load(v);
                    mx = _mm512_max_ps(mx, x[v]);
                }
                // lanes of the block's max above the reference by more than kSlack (all of
                // them when the reference is -inf and a score is finite, none for NaN)
                if (_mm512_cmp_ps_mask(mx, _mm512_set1_ps(mref + kSlack), _CMP_GT_OQ) != 0) {
                    const float mnew = _mm512_reduce_max_ps(mx);
                    // alpha = 2^(mref - mnew) (mref = -inf gives 0)
                    const __m512 alv = exp2_bf16(_mm512_set1_ps(mref - mnew));
                    m[i] = mref = mnew;
                    _mm512_store_ps(li, _mm512_mul_ps(_mm512_load_ps(li), alv));
                    float* o = O + i * p->DvP;
                    for (int64_t e = 0; e < p->DvP; e += 16)
                        _mm512_storeu_ps(o + e, _mm512_mul_ps(_mm512_loadu_ps(o + e), alv));
                }
                const __m512 mu = _mm512_set1_ps(std::isinf(mref) && mref < 0 ? 0.0f : mref);
                __m512 sum = _mm512_load_ps(li);
#pragma GCC unroll 16
                for (int v = 0; v < nvec; ++v) {
                    x[v] = exp2_bf16(_mm512_sub_ps(x[v], mu));  // masked-off tail lanes: 2^-inf = 0
                    sum = _mm512_add_ps(sum, x[v]);
                }
                _mm512_store_ps(li, sum);
            }
            if (a->dropout) drop(x, nvec, i, k.j0, nk);
            uint16_t* pb = Pb + i * BK;
            // two vectors to 32 bf16 at a time; an odd count pairs its last one with zeros,
            // which also zeroes the rest of the last 32-key chunk
#pragma GCC unroll 16
            for (int v = 0; v < nvec; v += 2) {
                const __m512 hi = Full || v + 1 < nvec ? x[v + 1] : _mm512_setzero_ps();
                _mm512_storeu_si512(pb + 16 * v, (__m512i)_mm512_cvtne2ps_pbh(hi, x[v]));
            }
        }

        // Dropout after the sum (l normalises the undropped softmax, as the reference drops after softmax).
        void drop(__m512* x, int nvec, int i, int64_t j0, int nk) const {
            const float keep_scale = 1.0f / (1.0f - a->drop_p);
            alignas(64) float tmp[BK];
            for (int v = 0; v < nvec; ++v) _mm512_store_ps(tmp + 16 * v, x[v]);
            for (int jj = 0; jj < nk; ++jj) {
                const uint64_t flat = static_cast<uint64_t>((bh * a->Tq + i0 + i) * a->Tk + j0 + jj);
                tmp[jj] = dropout_drops(a->seed, flat, a->drop_p) ? 0.0f : tmp[jj] * keep_scale;
            }
            for (int v = 0; v < nvec; ++v) x[v] = _mm512_load_ps(tmp + 16 * v);
        }
    };

    static void run_item(const Args& a, const Packed& p, int64_t item, unsigned char* ws) {
        const int64_t nqb = (a.Tq + BQ - 1) / BQ;
        const int64_t bh = item / nqb;
        const int64_t qb = nqb - 1 - item % nqb;  // reversed: costly causal blocks first
        const int64_t b = bh / a.H;
        Item it;
        it.a = &a;
        it.p = &p;
        it.bh = bh;
        it.i0 = qb * BQ;
        it.nq = static_cast<int>(std::min<int64_t>(BQ, a.Tq - it.i0));
        const int nq = it.nq;
        const int64_t Dk = a.Dk, Dv = a.Dv, Tk = a.Tk, DkP = p.DkP, DvP = p.DvP;
        const float* q = a.q + (bh * a.Tq + it.i0) * Dk;
        float* out = a.out + (bh * a.Tq + it.i0) * Dv;
        it.kp = p.k.get() + bh * p.TkP * DkP;
        it.vp = p.v.get() + bh * p.TkP * DvP;

        it.Qb = reinterpret_cast<uint16_t*>(ws);                   // [BQ][DkP]
        it.S = reinterpret_cast<float*>(it.Qb + BQ * DkP);          // [BQ][BK]
        it.Pb = reinterpret_cast<uint16_t*>(it.S + BQ * BK);        // [BQ][BK]
        it.O = reinterpret_cast<float*>(it.Pb + BQ * BK);           // [BQ][DvP]
        it.m = it.O + BQ * DvP;                                     // [BQ]
        it.l = it.m + BQ;                                           // [BQ][16]
        load_queries(it, q);

        const AmxTileConfig cfg = amx_tiles_16x64();
        _tile_loadconfig(&cfg);

        it.mask = a.mask->row(b, bh % a.H, Tk);  // per-head masks: this head's row
        const MaskRow& mask = it.mask;
        const int64_t kend = std::min<int64_t>(Tk, mask.key_end(it.i0 + nq - 1));
        const int64_t nblk = kend > 0 ? (kend + BK - 1) / BK : 0;
        // With fill -inf a masked key weighs exactly 0, so the blocks that the sparse
        // pattern masks whole for every query of the block (MaskRow::any_allowed: those
        // before a sliding window's first key, most of a strided pattern's) are left out
        // (as in flash_kernel.hpp). Otherwise every block from 0 is computed.
        std::vector<int64_t> starts;
        starts.reserve(static_cast<size_t>(nblk));
        for (int64_t j = 0; j < nblk; ++j)
            if (!a.fill_ninf || !mask.sparse ||
                mask.any_allowed(it.i0, it.i0 + nq - 1, j * BK, std::min(Tk, (j + 1) * BK) - 1))
                starts.push_back(j * BK);
        run_blocks(it, starts, kend);
        if (!a.fill_ninf) past_key_end(it, nblk);
        _tile_release();
        write_out(it, out);
    }

    // The query block, scaled, to bf16; padding rows and dims 0; state reset
    // (vcvtne2ps2bf16: round to nearest even, as to_bf16).
    static void load_queries(Item& it, const float* q) {
        const Args& a = *it.a;
        const int nq = it.nq;
        const int64_t Dk = a.Dk, DkP = it.p->DkP, DvP = it.p->DvP;
        float *m = it.m, *l = it.l, *O = it.O;
        for (int i = 0; i < nq; ++i) {
            const float f = a.qscale * (a.cosine ? inv_norm(q + i * Dk, Dk) : 1.0f);
            for (int64_t d = 0; d < DkP; d += 32)
                _mm512_storeu_si512(it.Qb + i * DkP + d,
                                    (__m512i)_mm512_cvtne2ps_pbh(load16(q + i * Dk + d + 16, Dk - d - 16, f),
                                                                 load16(q + i * Dk + d, Dk - d, f)));
        }
        std::memset(it.Qb + nq * DkP, 0, sizeof(uint16_t) * static_cast<size_t>((BQ - nq) * DkP));
        // Pb rows < nq are written by every softmax up to the block's last 32-key chunk,
        // all that P.V reads; rows >= nq stay 0
        std::memset(it.Pb + nq * BK, 0, sizeof(uint16_t) * static_cast<size_t>((BQ - nq) * BK));
        std::memset(O, 0, sizeof(float) * static_cast<size_t>(BQ * DvP));
        for (int i = 0; i < BQ; ++i) m[i] = kNegInf;
        std::fill(l, l + BQ * 16, 0.0f);
    }

    // The key blocks that hold scores, [0, kend), those of `starts` in order, through the tile
    // pipeline below. With fill -inf the keys from key_end(last query) on weigh exactly 0 for
    // every query of the block, so a block crossing the causal diagonal (or the padding) stops
    // there, in whole 32-key chunks of the tiles.
    static void run_blocks(Item& it, const std::vector<int64_t>& starts, int64_t kend) {
        const Args& a = *it.a;
        const int64_t Tk = a.Tk;
        auto block = [&](int64_t j0) {
            Block k{j0, static_cast<int>(std::min<int64_t>(BK, Tk - j0))};
            if (a.fill_ninf) k.nk = static_cast<int>(std::min<int64_t>(k.nk, kend - j0));
            return k;
        };
        const int64_t nrun = static_cast<int64_t>(starts.size());

        // The pipeline: the scores of a row group are computed while the softmax of the
        // group before it runs, and its P.V product while the softmax of the group after
        // it runs. During softmax(block j, group g): P.V(j, g-1) then scores(j+1, g-1);
        // for g = 0: P.V(j-1, G-1) then scores(j, G-1). Group g's O rows are rescaled in
        // softmax(j, g), after P.V(j-1, g) (issued in softmax(j-1, g+1) or softmax(j, 0)),
        // which needs G >= 2. Program order keeps every read after its write; the split
        // only decides what the tile unit has in hand while the vector units work.
        if (nrun > 0) {
            const Block k0 = block(starts[0]);
            for (int g = 0; g < G - 1; ++g) {
                TileJob t = it.scores(g, k0);
                t.finish();
            }
            Block prev{};
            for (int64_t j = 0; j < nrun; ++j) {
                const Block k = block(starts[static_cast<size_t>(j)]);
                const bool has_next = j + 1 < nrun;
                const Block kn = has_next ? block(starts[static_cast<size_t>(j + 1)]) : Block{};
                for (int g = 0; g < G; ++g) {
                    TileJob first, second;
                    if (g == 0) {
                        if (j > 0) first = it.values(G - 1, prev);
                        second = it.scores(G - 1, k);
                    } else {
                        first = it.values(g - 1, k);
                        if (has_next) second = it.scores(g - 1, kn);
                    }
                    it.apply_masks(g * 32, g * 32 + 32, k);
                    it.softmax(g * 32, g * 32 + 16, k, first);
                    it.softmax(g * 32 + 16, g * 32 + 32, k, second);
                }
                prev = k;
            }
            TileJob last = it.values(G - 1, prev);
            last.finish();
        }
    }

    // Blocks past key_end (only with a finite fill): every key masked for every
    // query of the block (as in flash_kernel.hpp); nothing more once the fill's
    // weight 2^(fill2 - m) is exactly 0 in float32 for every query, otherwise keys
    // whose score is the fill.
    static void past_key_end(Item& it, int64_t nblk) {
        const Args& a = *it.a;
        const int64_t Tk = a.Tk;
        const int nq = it.nq;
        const float* m = it.m;
        float* S = it.S;
        for (int64_t j0 = nblk * BK; j0 < Tk; j0 += BK) {
            bool negligible = true;
            for (int i = 0; i < nq; ++i) negligible = negligible && (m[i] - a.fill2 > 160.0f);
            if (negligible) break;
            const Block k{j0, static_cast<int>(std::min<int64_t>(BK, Tk - j0))};
            for (int i = 0; i < nq; ++i) std::fill(S + i * BK, S + i * BK + k.nk, a.fill2);
            for (int g = 0; g < G; ++g) {
                TileJob none;
                it.softmax(g * 32, g * 32 + 32, k, none);
                TileJob t = it.values(g, k);
                t.finish();
            }
        }
    }

    // out = O / l; a row with l = 0 (fully masked, fill -inf) is 0
    static void write_out(const Item& it, float* out) {
        const int64_t Dv = it.a->Dv, DvP = it.p->DvP;
        const float *l = it.l, *O = it.O;
        for (int i = 0; i < it.nq; ++i) {
            const float li = _mm512_reduce_add_ps(_mm512_load_ps(l + i * 16));
            const float inv = li > 0.0f ? 1.0f / li : 0.0f;
            for (int64_t e = 0; e < Dv; ++e) out[i * Dv + e] = O[i * DvP + e] * inv;
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
        parallel_for(items, t,
                     [&](int64_t item, int tid) { run_item(a, p, item, base + per * static_cast<size_t>(tid)); });
    }
};

}  // namespace

// Blocks: 64 queries (two row groups, the fewest the pipeline needs) x 256 keys.
// Measured here (T = 4096, B H = 8, Dk 64, 1 thread, best of 3 runs of 3, the
// 2-vCPU Sapphire Rapids shared, load ~3; GFLOP/s none / causal): 64 x 128: 452 /
// 380, 64 x 256: 500 / 433, 64 x 384: 522 / 431, 64 x 512: 525 / 427, 128 x 128:
// 460 / 378, 128 x 256: 510 / 407 (before the lazy reference point). Longer key
// blocks pay the per-row bookkeeping and the O tile round trip less often; 128-query
// blocks waste more of the causal diagonal.
void run_amx_bf16(const Args& a, int threads) { FlashAmx<64, 256>::run(a, threads); }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
bool amx_bf16_usable() { return false; }
void run_amx_bf16(const Args&, int) {}
}  // namespace attn::flash_detail
#endif
