// attn/core/mask_row.hpp: one batch row of an attn::Mask (attn/core/mask.hpp), the
// form in which every kernel reads a mask, and the element rule, written once.
//
// A MaskRow is a view: two pointers into the mask's values plus strides, valid
// while the Mask lives. It is plain C++17 with no library types, so the CUDA
// kernels read the very same struct (with device pointers, attention_cuda.cpp)
// and the very same rule: under nvcc the methods are __host__ __device__.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif

namespace attn {

// Batch row b of a mask over scores [Tq, Tk] (Mask::row): query i may attend to
// key j iff allowed(i, j), and additive_at(i, j) is added to their scaled score
// before masked_fill(~allowed, fill).
struct MaskRow {
    bool causal = false;              // keys j > i are masked
    int64_t key_len = 0;              // keys j >= key_len are padding; Tk when there is no padding
    const uint8_t* dense = nullptr;   // query 0's row [Tk] of the boolean part, 1 = allowed; null: no boolean part
    int64_t dense_stride = 0;         // from query i's row to query i + 1's: Tk, or 0 when it broadcasts over queries
    const float* additive = nullptr;  // query 0's row [Tk] of the additive part; null: no additive part
    int64_t additive_stride = 0;      // as dense_stride
    // The sparse pattern (Mask::sliding_window, strided, global_local), one rule on the
    // offset d = i - j: query i may see key j iff
    //     i < global  or  j < global  or  -after <= d <= before  or  (stride > 0 and d % stride == 0)
    // sparse = false: no sparse part (every offset allowed).
    bool sparse = false;
    int64_t before = 0, after = 0;  // the band: keys up to `before` behind the query and `after` ahead
    int64_t stride = 0;             // > 0: every stride-th offset is allowed too (Child et al.'s strided head)
    int64_t global = 0;             // tokens 0 .. global-1 see and are seen by every token

    ATTN_HOST_DEVICE bool sparse_allows(int64_t i, int64_t j) const {
        if (!sparse || i < global || j < global) return true;
        const int64_t d = i - j;
        return (d <= before && d >= -after) || (stride > 0 && d % stride == 0);
    }
    ATTN_HOST_DEVICE bool allowed(int64_t i, int64_t j) const {
        return (!causal || j <= i) && j < key_len && (dense == nullptr || dense[i * dense_stride + j] != 0) &&
               sparse_allows(i, j);
    }
    ATTN_HOST_DEVICE float additive_at(int64_t i, int64_t j) const {
        return additive == nullptr ? 0.0f : additive[i * additive_stride + j];
    }

    // True when the sparse part is a plain band: nothing outside [i - before, i + after].
    ATTN_HOST_DEVICE bool band_only() const { return sparse && stride == 0 && global == 0; }

    // Keys [0, key_end(i)) are all that causal, padding and a band let query i, or any
    // query before it, attend to: a tiled kernel skips every key block from
    // key_end(its last query) on.
    ATTN_HOST_DEVICE int64_t key_end(int64_t i) const {
        int64_t e = causal && i + 1 < key_len ? i + 1 : key_len;
        if (band_only() && i + after + 1 < e) e = i + after + 1 > 0 ? i + after + 1 : 0;
        return e;
    }
    // Keys [key_begin(i), ...) are all that a band lets query i, or any query after it,
    // attend to (0 without a band): a tiled kernel starts at the block holding key_begin(its first query).
    ATTN_HOST_DEVICE int64_t key_begin(int64_t i) const {
        if (!band_only() || i - before <= 0) return 0;
        return i - before < key_len ? i - before : key_len;
    }
    // Queries [query_begin(j), query_end(j)) are all that may attend to key j (for
    // query_begin: or any key after it; for query_end: or any key before it), from
    // causal and a band; [0, Tq) otherwise. The backward's key-major loop uses them.
    ATTN_HOST_DEVICE int64_t query_begin(int64_t j) const {
        int64_t b = causal ? j : 0;
        if (band_only() && j - after > b) b = j - after;
        return b > 0 ? b : 0;
    }
    ATTN_HOST_DEVICE int64_t query_end(int64_t j, int64_t Tq) const {
        if (!band_only() || j + before + 1 >= Tq) return Tq;
        return j + before + 1 > 0 ? j + before + 1 : 0;
    }

    // False only when no query in [i_lo, i_hi] may attend to any key in [j_lo, j_hi]
    // by the causal, padding and sparse parts (the boolean part is not read: true
    // may still mean "none"). Exact for those parts: a tile it rejects holds no
    // allowed pair, and a kernel may skip it.
    ATTN_HOST_DEVICE bool any_allowed(int64_t i_lo, int64_t i_hi, int64_t j_lo, int64_t j_hi) const {
        if (j_hi >= key_len) j_hi = key_len - 1;
        if (i_lo > i_hi || j_lo > j_hi) return false;
        if (causal && j_lo > i_hi) return false;
        if (!sparse || i_lo < global || j_lo < global) return true;
        // offsets d = i - j over the tile form the interval [dlo, dhi] (every value in it occurs)
        int64_t dlo = i_lo - j_hi;
        const int64_t dhi = i_hi - j_lo;
        if (causal && dlo < 0) dlo = 0;
        if (dlo <= before && dhi >= -after) return true;
        if (stride > 0) {
            // a multiple of stride in [dlo, dhi]: floor(dhi / stride) * stride >= dlo
            const int64_t q = dhi >= 0 ? dhi / stride : -((-dhi + stride - 1) / stride);
            return q * stride >= dlo;
        }
        return false;
    }
    // True when the sparse part allows every pair of the tile (or there is none).
    ATTN_HOST_DEVICE bool sparse_allows_all(int64_t i_lo, int64_t i_hi, int64_t j_lo, int64_t j_hi) const {
        if (!sparse || i_hi < global || j_hi < global) return true;
        return i_lo - j_hi >= -after && i_hi - j_lo <= before;
    }

    // True when every query >= i_lo may attend to every key <= j_hi with nothing
    // added: a tile of those needs no element-wise mask work. Always false with a
    // sparse part (see tile_all_allowed).
    ATTN_HOST_DEVICE bool all_allowed(int64_t i_lo, int64_t j_hi) const {
        return dense == nullptr && additive == nullptr && !sparse && j_hi < key_end(i_lo);
    }
    // The same for the tile [i_lo, i_hi] x [j_lo, j_hi] alone, sparse part included.
    ATTN_HOST_DEVICE bool tile_all_allowed(int64_t i_lo, int64_t i_hi, int64_t j_lo, int64_t j_hi) const {
        if (dense != nullptr || additive != nullptr || j_hi >= key_len || (causal && j_hi > i_lo)) return false;
        return sparse_allows_all(i_lo, i_hi, j_lo, j_hi);
    }

    // Number of keys query i may attend to. Without a boolean or sparse part, key_end(i);
    // with a sparse part the candidates are counted (globals, the band, the stride's
    // offsets), O(global + band + Tk / stride), never all Tk keys.
    ATTN_HOST_DEVICE int64_t allowed_count(int64_t i) const {
        const int64_t end = key_end(i);
        if (dense == nullptr && !sparse) return end;
        if (!sparse || i < global) {
            int64_t n = 0;
            for (int64_t j = 0; j < end; ++j) n += allowed(i, j) ? 1 : 0;
            return n;
        }
        // candidates in increasing j: [0, global), the band [i - before, i + after], then the stride's offsets
        int64_t n = 0;
        const int64_t g_end = global < end ? global : end;
        for (int64_t j = 0; j < g_end; ++j) n += allowed(i, j) ? 1 : 0;
        int64_t b_lo = i - before, b_hi = i + after;  // inclusive
        if (b_lo < g_end) b_lo = g_end;
        if (b_hi > end - 1) b_hi = end - 1;
        for (int64_t j = b_lo; j <= b_hi; ++j) n += allowed(i, j) ? 1 : 0;
        if (stride > 0) {
            // j = i - t * stride for integers t, in [g_end, end), outside the band
            const int64_t r = ((i % stride) + stride) % stride;  // the smallest j >= 0 on the grid
            int64_t j = r;
            if (j < g_end) j += (g_end - j + stride - 1) / stride * stride;
            for (; j < end; j += stride)
                if (j < b_lo || j > b_hi) n += allowed(i, j) ? 1 : 0;
        }
        return n;
    }
};

}  // namespace attn
