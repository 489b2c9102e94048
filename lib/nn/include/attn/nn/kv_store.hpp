// attn/nn/kv_store.hpp: the KV cache itself, the keys and values an incremental decoder
// keeps per layer (attn/nn/kv_cache.hpp tells why they suffice). Apart from the decoders so that
// the Transformer stack (attn/nn/stack.hpp: step) and CausalDecoder both use it without the
// stack's source depending on the decoder built on top of it.
//
// Cache size: per layer, K (B, H_kv, T, Dk) and V (B, H_kv, T, Dv), so
//   bytes = layers * B * H_kv * T * (Dk + Dv) * bytes_per_value.
// With multi-head attention H_kv = H; grouped-query attention shares each K/V head
// among g query heads (H_kv = H / g) and multi-query attention keeps one (H_kv = 1):
// the cache shrinks by the factor H / H_kv.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// Bytes of a KV cache holding T tokens (see above). In double: no overflow.
double kv_cache_bytes(int64_t layers, int64_t batch, int64_t kv_heads, int64_t T, int64_t d_k, int64_t d_v,
                      int64_t bytes_per_value = 4);

class KvCache {
public:
    // An empty cache for `layers` layers of a batch of B sequences, H heads of Dk and Dv.
    // InputError on a size < 1.
    KvCache(int64_t layers, int64_t batch, int64_t heads, int64_t d_k, int64_t d_v);

    // Appends one token's keys k (B, H, 1, Dk) and values v (B, H, 1, Dv) to `layer`.
    // ShapeError on other shapes, InputError on a layer out of range.
    void append(int64_t layer, const Tensor& k, const Tensor& v);
    // The cached keys (B, H, T, Dk) and values (B, H, T, Dv) of a layer, T = length(layer).
    Tensor keys(int64_t layer) const;
    Tensor values(int64_t layer) const;

    int64_t layers() const { return layers_; }
    int64_t length(int64_t layer) const;
    // Tokens cached in every layer (the last layer's length, after a full step).
    int64_t length() const { return length(layers_ - 1); }
    // Bytes of float32 values held now: kv_cache_bytes(layers, B, H, length(), Dk, Dv).
    double bytes() const;

private:
    int64_t layers_, batch_, heads_, d_k_, d_v_;
    std::vector<int64_t> len_;                        // [layer]
    std::vector<std::vector<std::vector<float>>> k_;  // [layer][b*H + h]: T rows of Dk
    std::vector<std::vector<std::vector<float>>> v_;  // [layer][b*H + h]: T rows of Dv
    void check_layer(int64_t layer) const;
};

}  // namespace attn
