// lib/cpu/src/gemm/gemm_amx.cpp: the bf16 strip GEMM on Intel AMX tiles (see attn/cpu/gemm.hpp:
// strips_amx). Same operands and the same result, to float32 rounding, as
// strips_bf16 (bf16 inputs and weights, products summed in float32), but each
// TDPBF16PS multiplies a 16 x 32 bf16 tile of x by a 32 x 16 bf16 tile of the weight
// into a 16 x 16 float32 tile: 8192 multiply-adds in one instruction, where AVX-512 BF16's
// vdpbf16ps does 32 (and on Intel no faster than two float32 FMAs).
//
// A block of 32 rows x 32 columns of out lives in four accumulator tiles over the whole
// k loop; each step of 32 k loads two tiles of x (rows 0-15, 16-31; 64 bytes of bf16 per
// row) and two of the weight, straight from the bf16 strips: rows of a B tile
// are pairs of k (16 columns x 2 bf16 = 64 bytes), 128 bytes apart in a 32-column strip.
// x and the strips are zero-padded to whole tiles (rows to 32, k to 32), so no tile reads
// past them. The tiles go through a 32 x 32 float32 buffer, where the bias (and the GELU,
// by the caller) are added, and only rows < N and columns < n_out reach out.
//
// Each call loads the tile configuration itself (a pool thread may never have run one)
// and releases the tiles at the end. Needs attn::cpu_amx_bf16_usable().
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "attn/cpu/amx_tiles.hpp"
#include "attn/cpu/gemm.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12 && defined(__linux__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace attn::gemm {

void strips_amx(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                   int64_t n_out, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const AmxTileConfig cfg = amx_tiles_16x64();
    _tile_loadconfig(&cfg);
    const int64_t xstride = kp * 4;   // bytes per row of x: kp pairs of 2 bf16
    const int64_t wstride = 32 * 4;   // bytes per pair row of a 32-column strip
    alignas(64) float acc[32 * 32];
    for (int64_t j0 = c0; j0 < c1; j0 += 32) {
        const uint32_t* strip = w_pairs + (j0 / 32) * kp * 32;
        for (int64_t i0 = r0; i0 < r1; i0 += 32) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t p = 0; p < kp; p += 16) {  // 16 pairs = 32 k per step
                _tile_loadd(4, x_pairs + i0 * kp + p, xstride);
                _tile_loadd(5, x_pairs + (i0 + 16) * kp + p, xstride);
                _tile_loadd(6, strip + p * 32, wstride);
                _tile_loadd(7, strip + p * 32 + 16, wstride);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, acc, 128);
            _tile_stored(1, acc + 16, 128);
            _tile_stored(2, acc + 16 * 32, 128);
            _tile_stored(3, acc + 16 * 32 + 16, 128);
            const int64_t rows = std::min<int64_t>({32, r1 - i0, N - i0}), cols = std::min<int64_t>(32, n_out - j0);
            for (int64_t r = 0; r < rows; ++r) {
                float* o = out + (i0 + r) * n_out + j0;
                const float* a = acc + r * 32;
                if (b != nullptr)
                    for (int64_t c = 0; c < cols; ++c) o[c] = a[c] + b[j0 + c];
                else
                    std::memcpy(o, a, static_cast<size_t>(cols) * sizeof(float));
            }
        }
    }
    _tile_release();
}

}  // namespace attn::gemm
#pragma GCC pop_options

#else
namespace attn::gemm {
void strips_amx(float*, const uint32_t*, const uint32_t*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                int64_t, int64_t) {}
}  // namespace attn::gemm
#endif
