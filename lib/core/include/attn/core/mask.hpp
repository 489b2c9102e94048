// attn/core/mask.hpp: which keys each query may attend to.
//
// A Mask is the AND of up to three boolean parts, each optional:
//   causal       query i sees key j only when j <= i (C24)
//   key padding  per batch row b, keys j >= key_len[b] are padding (C23, C26)
//   dense        a boolean [B, Tq, Tk] or per-head [B, H, Tq, Tk] array, 1 = may attend
// plus an optional sparse pattern (a sliding window, Child et al.'s strided pattern,
// or global + local tokens: C42), which is a rule on positions, never stored as an
// array, so a tiled kernel can skip the key blocks it masks whole (cost O(T w));
// plus an optional additive float array [B, Tq, Tk] or [B, H, Tq, Tk] that is
// added to the scaled scores before the boolean parts are applied (PyTorch's
// float attn_mask). The boolean parts follow masked_fill(~allowed, fill).
//
// Broadcasting: a dense or additive array's batch, head or query dim of 1
// stretches over every batch row, head or query (PyTorch's [B, 1, T] key padding
// mask is a dense [B, 1, Tk]; a [B, Tq, Tk] array is one with H = 1). The rule is
// applied in one place, row(b, h): everything that reads a mask (the reference,
// the tiled CPU and CUDA kernels, the FLOP count, the statistics, the commands)
// reads batch row b, head h through the MaskRow it returns
// (attn/core/mask_row.hpp), whose allowed(i, j) and additive_at(i, j) are the
// element rule. A mask whose parts differ per head (heads() > 1) must be read
// with row(b, h, Tk); the CUDA kernels, which take one row per batch row, refuse it.
//
// Shapes are checked when a mask is built: a factory throws ShapeError (or
// InputError for a negative length) rather than return a mask that cannot apply
// to any scores. check(B, Tq, Tk) then only asks whether it applies to these.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/mask_row.hpp"

namespace attn {

class Mask {
public:
    Mask() = default;  // no mask: every query attends to every key
    static Mask none() { return {}; }
    // Query i sees key j only when j <= i.
    static Mask make_causal();
    // Key padding by lengths, one per batch row: keys j >= lengths[b] are padding.
    // Throws ShapeError for no lengths, InputError for a negative one.
    static Mask key_padding(std::vector<int64_t> lengths);
    // The factories below take row-major values and throw ShapeError unless every dim
    // is at least 1 and the values fill them exactly.
    // Key padding as a boolean [B, Tk], 1 = real token (kept), 0 = padding; a dense [B, 1, Tk].
    static Mask key_padding_bool(int64_t B, int64_t Tk, const std::vector<uint8_t>& keep);
    // Boolean [B, Tq, Tk] (B = 1 or Tq = 1 broadcast); 1 = allowed.
    static Mask custom(int64_t B, int64_t Tq, int64_t Tk, std::vector<uint8_t> allowed);
    // Additive float [B, Tq, Tk] (B = 1 or Tq = 1 broadcast).
    static Mask additive_mask(int64_t B, int64_t Tq, int64_t Tk, std::vector<float> add);
    // Per head: boolean or additive [B, H, Tq, Tk] (B, H or Tq = 1 broadcast), as
    // PyTorch's attn_mask of shape (N, num_heads, L, S) in scaled_dot_product_attention.
    static Mask custom_heads(int64_t B, int64_t H, int64_t Tq, int64_t Tk, std::vector<uint8_t> allowed);
    static Mask additive_heads(int64_t B, int64_t H, int64_t Tq, int64_t Tk, std::vector<float> add);

    // Sparse patterns (C42). Each is a rule on the offset d = i - j (MaskRow::sparse_allows);
    // `causal` ANDs the causal mask in. Throws InputError for a width, stride or count < 1
    // (global_local: g >= 0 and w >= 0).
    // Sliding window of width w. Causal: query i sees the w most recent keys, i - w < j <= i.
    // Symmetric (Longformer's convention): |i - j| <= w / 2 (integer division), so w + 1
    // keys for an even w, w for an odd one, fewer at the ends.
    static Mask sliding_window(int64_t w, bool causal);
    // Strided (Child et al., 2019, the "strided" factorisation, both heads in one mask):
    // query i sees key j iff |i - j| < s (the local diagonal band of s keys on each side)
    // or (i - j) is a multiple of s (every s-th key, counted from the query). With
    // s ~ sqrt(T) each query sees ~ 3 sqrt(T) keys (~2 sqrt(T) causal).
    static Mask strided(int64_t s, bool causal);
    // Global + local (Longformer, BigBird): tokens 0 .. g-1 are global, they see every key
    // and every query sees them; every other pair is the symmetric window of width w
    // (|i - j| <= w / 2).
    static Mask global_local(int64_t g, int64_t w, bool causal);

    // AND of both masks' boolean parts (key lengths: the smaller); additive parts are
    // summed. Throws ShapeError when the two disagree on the batch, queries or keys.
    Mask combined(const Mask& other) const;

    bool is_none() const {
        return !causal_ && key_len_.empty() && dense_.empty() && additive_.empty() && !sparse_.on;
    }
    // True when the mask has a sparse pattern (a window, strided, global + local).
    bool is_sparse() const { return sparse_.on; }
    // Throws ShapeError if the mask cannot apply to a [B, H, Tq, Tk] score tensor. O(1).
    void check(int64_t B, int64_t H, int64_t Tq, int64_t Tk) const;
    // The same for a reader that takes one row per batch row (the CUDA kernels): a
    // per-head mask (heads() > 1) is a ShapeError.
    void check(int64_t B, int64_t Tq, int64_t Tk) const;
    // The heads a per-head part pins; 1 when no part differs per head.
    int64_t heads() const;
    // True when every batch row reads the same boolean row (no key padding, no dense
    // part that differs per batch row): a count over the rows needs only row 0.
    bool same_boolean_rows_per_batch() const { return key_len_.empty() && (dense_.empty() || dense_.batch == 1); }

    // Batch row b, head h of the mask over Tk keys, for a mask that passed
    // check(B, H, Tq, Tk) with b < B, h < H. The row points into the mask's values,
    // so it lives as long as the mask (and a temporary mask has no rows).
    MaskRow row(int64_t b, int64_t h, int64_t Tk) const& {
        return row(b, h, Tk, dense_.values.data(), additive_.values.data());
    }
    MaskRow row(int64_t b, int64_t h, int64_t Tk) const&& = delete;
    // Head 0's row: every head's, when heads() == 1.
    MaskRow row(int64_t b, int64_t Tk) const& { return row(b, 0, Tk); }
    MaskRow row(int64_t b, int64_t Tk) const&& = delete;
    // The same row with its pointers into copies of dense_values() and additive_values()
    // elsewhere (a GPU's memory): dense and additive are those copies' first elements.
    MaskRow row(int64_t b, int64_t h, int64_t Tk, const uint8_t* dense, const float* additive) const;
    MaskRow row(int64_t b, int64_t Tk, const uint8_t* dense, const float* additive) const {
        return row(b, 0, Tk, dense, additive);
    }
    // The boolean and additive parts' values (empty when absent), row-major [batch, heads, queries, Tk]
    // with batch, heads and queries as given to the factory, for a copy to another device.
    std::span<const uint8_t> dense_values() const { return dense_.values; }
    std::span<const float> additive_values() const { return additive_.values; }

    // Human summary: "causal + key padding (lengths 4,6)".
    std::string describe() const;

private:
    // A dense or additive part: values [batch, heads, queries, keys], row-major; a
    // batch, heads or queries of 1 broadcasts. No values: the part is absent.
    template <class T>
    struct Part {
        std::vector<T> values;
        int64_t batch = 0, queries = 0, keys = 0, heads = 1;

        bool empty() const { return values.empty(); }
        // The broadcast rule: where batch row b, head h starts, and the step from one query's row to the next.
        int64_t offset(int64_t b, int64_t h) const {
            return ((batch == 1 ? 0 : b) * heads + (heads == 1 ? 0 : h)) * queries * keys;
        }
        int64_t query_stride() const { return queries == 1 ? 0 : keys; }
        bool fits(int64_t B, int64_t H, int64_t Tq, int64_t Tk) const {
            return empty() || ((batch == 1 || batch == B) && (heads == 1 || heads == H) &&
                               (queries == 1 || queries == Tq) && keys == Tk);
        }
        // [max batch, max queries, keys]: op(this, o) elementwise, after broadcasting both.
        template <class Op>
        Part broadcast(const Part& o, Op op) const;
    };
    // The sizes of the scores [B, Tq, Tk] that the parts pin down; 0 where none does
    // (no part, or only parts that broadcast along that dim).
    struct Extent {
        int64_t batch = 0, queries = 0, keys = 0, heads = 0;
    };
    Extent extent() const;

    // The sparse pattern: MaskRow's sparse, before, after, stride, global.
    struct Sparse {
        bool on = false;
        int64_t before = 0, after = 0, stride = 0, global = 0;
        std::string name;  // for describe(): "sliding window 256"
    };

    bool causal_ = false;
    Sparse sparse_;
    std::vector<int64_t> key_len_;  // [B], or empty: no key padding
    int64_t max_key_len_ = 0;       // the largest of key_len_, for check()
    Part<uint8_t> dense_;           // entries 0 or 1
    Part<float> additive_;
};

}  // namespace attn
