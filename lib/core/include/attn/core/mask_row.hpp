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

    ATTN_HOST_DEVICE bool allowed(int64_t i, int64_t j) const {
        return (!causal || j <= i) && j < key_len && (dense == nullptr || dense[i * dense_stride + j] != 0);
    }
    ATTN_HOST_DEVICE float additive_at(int64_t i, int64_t j) const {
        return additive == nullptr ? 0.0f : additive[i * additive_stride + j];
    }

    // Keys [0, key_end(i)) are all that causal and padding let query i, or any
    // query before it, attend to: a tiled kernel skips every key block from
    // key_end(its last query) on.
    ATTN_HOST_DEVICE int64_t key_end(int64_t i) const { return causal && i + 1 < key_len ? i + 1 : key_len; }

    // True when every query >= i_lo may attend to every key <= j_hi with nothing
    // added: a tile of those needs no element-wise mask work.
    ATTN_HOST_DEVICE bool all_allowed(int64_t i_lo, int64_t j_hi) const {
        return dense == nullptr && additive == nullptr && j_hi < key_end(i_lo);
    }

    // Number of keys query i may attend to (key_end(i) when there is no boolean part).
    ATTN_HOST_DEVICE int64_t allowed_count(int64_t i) const {
        const int64_t end = key_end(i);
        if (dense == nullptr) return end;
        int64_t n = 0;
        for (int64_t j = 0; j < end; ++j) n += allowed(i, j) ? 1 : 0;
        return n;
    }
};

}  // namespace attn
