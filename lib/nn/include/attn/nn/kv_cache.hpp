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
// The cache itself, and its size, are in attn/nn/kv_store.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"
#include "attn/core/linear.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/kv_store.hpp"
#include "attn/nn/mha.hpp"
#include "attn/nn/stack.hpp"

namespace attn {

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
    Tensor step(const Tensor& x_t, KvCache& cache, const AttentionOptions& opt,
                std::vector<Tensor>* layer_out = nullptr, const TraceFn* trace = nullptr) const;
    // An empty cache that fits this decoder, for a batch of B.
    KvCache make_cache(int64_t batch) const;

private:
    DecoderConfig cfg_;
};

}  // namespace attn
