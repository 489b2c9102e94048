// attn/nn/kv_cache.hpp: incremental decoding with a cache of keys and values.
//
// Under a causal mask, query t sees keys 0..t only, and key j depends on token
// j alone (K = x W_kᵀ + b_k, row by row). So when token t arrives, the keys and
// values of tokens 0..t-1 are already known and unchanged: a decoder keeps them
// (the KV cache) and computes, per layer, only the new token's q, k and v,
// appends k and v, and lets the one query attend to all cached keys. No mask is
// needed: the cache holds exactly the keys query t may see.
//
// CausalDecoder is a stack of `layers` blocks, each
//   h   = x + MHA(x, causal)                 (B, T, D)
//   out = h + W_2 relu(W_1 h + b_1) + b_2    (B, T, D), W_1 [F, D], W_2 [D, F]
// (the feed-forward acts on each token alone, so it needs no cache): the Transformer stack
// (attn/nn/stack.hpp) with no LayerNorm, a ReLU MLP and no embeddings, run on vectors.
// forward() runs a whole sequence with the causal mask; step() runs one token against
// the cache. The two give the same numbers to float32 rounding (tests/test_kv_cache.cpp).
//
// Cache size: per layer, K (B, H_kv, T, Dk) and V (B, H_kv, T, Dv), so
//   bytes = layers * B * H_kv * T * (Dk + Dv) * bytes_per_value.
// With multi-head attention H_kv = H; grouped-query attention shares each K/V head
// among g query heads (H_kv = H / g) and multi-query attention keeps one (H_kv = 1):
// the cache shrinks by the factor H / H_kv.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"
#include "attn/core/linear.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/mha.hpp"
#include "attn/nn/stack.hpp"

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

struct DecoderConfig {
    int64_t d_model = 16, heads = 2, layers = 2, d_ff = 0;  // d_ff 0: 4 * d_model
    int64_t d_k = 0, d_v = 0;                               // 0: as MhaConfig
    bool bias = true;
    // Fills the defaults and validates (InputError on a size < 1, heads not dividing D).
    DecoderConfig resolved() const;
};

class CausalDecoder {
public:
    // Weights from `init` drawn from Rng(seed) in block order (attention q, k, v, o, then the
    // MLP's fc and proj).
    CausalDecoder(const DecoderConfig& cfg, const InitSpec& init, uint64_t seed);
    const DecoderConfig& config() const { return cfg_; }
    // The stack this decoder is: no norm, ReLU MLP, no vocabulary; its layers are the blocks.
    TransformerStack stack;

    // The whole sequence x (B, T, D) with the causal mask -> (B, T, D). layer_out,
    // if given, receives each block's output (B, T, D).
    Tensor forward(const Tensor& x, const AttentionOptions& opt, std::vector<Tensor>* layer_out = nullptr) const;
    // One token x_t (B, 1, D), the next position after those in `cache` -> (B, 1, D);
    // appends the token's keys and values to every layer of the cache. layer_out
    // receives each block's output (B, 1, D); trace, the steps with their shapes
    // (the cache's K and V growing).
    Tensor step(const Tensor& x_t, KvCache& cache, const AttentionOptions& opt, std::vector<Tensor>* layer_out = nullptr,
                const TraceFn* trace = nullptr) const;
    // An empty cache that fits this decoder, for a batch of B.
    KvCache make_cache(int64_t batch) const;

private:
    DecoderConfig cfg_;
};

}  // namespace attn
