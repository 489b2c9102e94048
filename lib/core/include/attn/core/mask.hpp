// attn/core/mask.hpp: which keys each query may attend to.
//
// A Mask is the AND of up to three parts, each optional:
//   causal      query i sees key j only when j <= i (C24)
//   key_len     per batch row b, keys j >= key_len[b] are padding (C23, C26)
//   dense       a boolean [Bm, Tq, Tk] (Bm = 1 broadcasts over batch, Tq = 1 over
//               queries, as PyTorch's [B, 1, T] key padding mask does), 1 = may attend
// plus an optional additive float mask [Ba, Tqa, Tk] (Ba = 1 broadcasts) that is
// added to the scaled scores before the boolean parts are applied (PyTorch's
// float attn_mask). The boolean parts follow masked_fill(~allowed, fill).
//
// Fast paths (flash, CUDA) read causal and key_len directly and skip whole
// blocks; dense and additive are honoured element by element.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct Mask {
    bool causal = false;
    std::vector<int64_t> key_len;   // empty, or one valid length per batch row
    int64_t Bm = 0, Tq = 0, Tk = 0; // dims of `dense` (Bm = 0: no dense part)
    std::vector<uint8_t> dense;     // [Bm, Tq, Tk], 1 = allowed
    int64_t Ba = 0, Tqa = 0;        // dims of `additive` (Ba = 0: none); Tk as above
    std::vector<float> additive;    // [Ba, Tqa, Tk]

    static Mask none() { return {}; }
    static Mask make_causal();
    static Mask key_padding(std::vector<int64_t> lengths);
    // Boolean key padding [B, Tk], 1 = real token (kept), 0 = padding.
    static Mask key_padding_bool(int64_t B, int64_t Tk, const std::vector<uint8_t>& keep);
    // Custom boolean mask [Tq, Tk] (batch 1, broadcast) or [B, Tq, Tk]; 1 = allowed.
    static Mask custom(int64_t B, int64_t Tq, int64_t Tk, std::vector<uint8_t> allowed);
    static Mask additive_mask(int64_t B, int64_t Tq, int64_t Tk, std::vector<float> add);

    // AND of both masks' boolean parts; additive parts are summed.
    Mask combined(const Mask& other) const;

    bool is_none() const { return !causal && key_len.empty() && dense.empty() && additive.empty(); }
    bool allowed(int64_t b, int64_t i, int64_t j) const {
        if (causal && j > i) return false;
        if (!key_len.empty() && j >= key_len[static_cast<size_t>(b)]) return false;
        if (!dense.empty() &&
            !dense[static_cast<size_t>(((Bm == 1 ? 0 : b) * Tq + (Tq == 1 ? 0 : i)) * Tk + j)])
            return false;
        return true;
    }
    float additive_at(int64_t b, int64_t i, int64_t j) const {
        return additive.empty()
                   ? 0.0f
                   : additive[static_cast<size_t>(((Ba == 1 ? 0 : b) * Tqa + (Tqa == 1 ? 0 : i)) * Tk + j)];
    }
    // Throws ShapeError if the mask cannot apply to a [B, *, Tq, Tk] score tensor.
    void check(int64_t B, int64_t Tq_, int64_t Tk_) const;
    // Human summary: "causal + key padding [4, 6]".
    std::string describe() const;
    // Number of keys query i of batch row b may attend to.
    int64_t allowed_count(int64_t b, int64_t i, int64_t Tk_) const;
};

// Parses the CLI's --mask: none | causal | pad:L1,L2,... | causal+pad:L1,...
// B and T are the batch and sequence sizes the mask is for; the lengths must
// number B and lie in [0, T] (0 makes a fully masked row, allowed on purpose).
// Throws InputError with a one-line message naming --mask and the rule.
Mask parse_mask(std::string_view spec, int64_t B, int64_t T);

}  // namespace attn
