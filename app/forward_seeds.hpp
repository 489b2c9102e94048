// app/forward_seeds.hpp: how `attn forward` draws its layer and its inputs from --seed,
// written once for every place that must give the same numbers (the command itself and the
// lab's playground, whose page names the command that repeats it): the weights from stream 0
// in the layer's init order (q, k, v, o), x from stream 1, dL/d out from stream 2, the
// cross-attention inputs x_kv and x_v from streams 3 and 4, each element N(0, 1).
#pragma once

#include <cstdint>

#include "attn/core/init.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/mha.hpp"

namespace attn::cli {

enum ForwardStream : uint64_t { kStreamWeights = 0, kStreamX = 1, kStreamDout = 2, kStreamXkv = 3, kStreamXv = 4 };

// A tensor of `shape` filled with N(0, 1) draws from (seed, stream), in flat order.
inline Tensor seeded_normal(const Shape& shape, uint64_t seed, uint64_t stream) {
    Tensor t(shape);
    Rng rng(seed, stream);
    for (auto& v : t.data) v = rng.normal();
    return t;
}

// The layer's weights drawn by `init` from (seed, kStreamWeights).
inline void seed_layer(MultiHeadAttention& mha, const InitSpec& init, uint64_t seed) {
    Rng rng(seed, kStreamWeights);
    mha.init(init, rng);
}

}  // namespace attn::cli
