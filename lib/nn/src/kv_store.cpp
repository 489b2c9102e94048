// The KV cache of attn/nn/kv_store.hpp: keys and values per layer, growing by one token
// at a time.
#include "attn/nn/kv_store.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

double kv_cache_bytes(int64_t layers, int64_t batch, int64_t kv_heads, int64_t T, int64_t d_k, int64_t d_v,
                      int64_t bytes_per_value) {
    return static_cast<double>(layers) * static_cast<double>(batch) * static_cast<double>(kv_heads) *
           static_cast<double>(T) * static_cast<double>(d_k + d_v) * static_cast<double>(bytes_per_value);
}

KvCache::KvCache(int64_t layers, int64_t batch, int64_t heads, int64_t d_k, int64_t d_v)
    : layers_(layers), batch_(batch), heads_(heads), d_k_(d_k), d_v_(d_v) {
    if (layers < 1 || batch < 1 || heads < 1 || d_k < 1 || d_v < 1)
        throw InputError(
            fmt::format("a KV cache needs layers, batch, heads, d_k and d_v of at least 1, got {}, {}, {}, {}, {}",
                        layers, batch, heads, d_k, d_v));
    len_.assign(static_cast<size_t>(layers), 0);
    k_.assign(static_cast<size_t>(layers), std::vector<std::vector<float>>(static_cast<size_t>(batch * heads)));
    v_ = k_;
}

void KvCache::check_layer(int64_t layer) const {
    if (layer < 0 || layer >= layers_)
        throw InputError(fmt::format("layer {} is outside the cache's [0, {}]", layer, layers_ - 1));
}

int64_t KvCache::length(int64_t layer) const {
    check_layer(layer);
    return len_[static_cast<size_t>(layer)];
}

void KvCache::append(int64_t layer, const Tensor& k, const Tensor& v) {
    check_layer(layer);
    if (k.shape != Shape{batch_, heads_, 1, d_k_} || v.shape != Shape{batch_, heads_, 1, d_v_})
        throw ShapeError(fmt::format("the cache appends one token's K {} and V {}, got K {} and V {}",
                                     shape_str({batch_, heads_, 1, d_k_}), shape_str({batch_, heads_, 1, d_v_}),
                                     shape_str(k.shape), shape_str(v.shape)));
    auto& ks = k_[static_cast<size_t>(layer)];
    auto& vs = v_[static_cast<size_t>(layer)];
    for (int64_t bh = 0; bh < batch_ * heads_; ++bh) {
        ks[static_cast<size_t>(bh)].insert(ks[static_cast<size_t>(bh)].end(), k.ptr() + bh * d_k_,
                                           k.ptr() + (bh + 1) * d_k_);
        vs[static_cast<size_t>(bh)].insert(vs[static_cast<size_t>(bh)].end(), v.ptr() + bh * d_v_,
                                           v.ptr() + (bh + 1) * d_v_);
    }
    ++len_[static_cast<size_t>(layer)];
}

Tensor KvCache::keys(int64_t layer) const {
    const int64_t T = length(layer);
    Tensor out(Shape{batch_, heads_, T, d_k_});
    const auto& ks = k_[static_cast<size_t>(layer)];
    for (int64_t bh = 0; bh < batch_ * heads_; ++bh)
        std::copy(ks[static_cast<size_t>(bh)].begin(), ks[static_cast<size_t>(bh)].end(), out.ptr() + bh * T * d_k_);
    return out;
}

Tensor KvCache::values(int64_t layer) const {
    const int64_t T = length(layer);
    Tensor out(Shape{batch_, heads_, T, d_v_});
    const auto& vs = v_[static_cast<size_t>(layer)];
    for (int64_t bh = 0; bh < batch_ * heads_; ++bh)
        std::copy(vs[static_cast<size_t>(bh)].begin(), vs[static_cast<size_t>(bh)].end(), out.ptr() + bh * T * d_v_);
    return out;
}

double KvCache::bytes() const {
    double n = 0;
    for (int64_t l = 0; l < layers_; ++l)
        n += kv_cache_bytes(1, batch_, heads_, len_[static_cast<size_t>(l)], d_k_, d_v_);
    return n;
}

}  // namespace attn
