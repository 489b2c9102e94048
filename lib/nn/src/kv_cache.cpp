// The KV cache and the causal decoder that uses it (see attn/nn/kv_cache.hpp).
#include "attn/nn/kv_cache.hpp"

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

DecoderConfig DecoderConfig::resolved() const {
    DecoderConfig c = *this;
    if (c.layers < 1) throw InputError(fmt::format("a decoder needs at least 1 layer, got {}", c.layers));
    if (c.d_ff == 0) c.d_ff = 4 * c.d_model;
    if (c.d_ff < 1) throw InputError(fmt::format("the feed-forward width must be at least 1, got {}", c.d_ff));
    const MhaConfig m = MhaConfig{c.d_model, c.heads, c.d_k, c.d_v, c.bias}.resolved();
    c.d_k = m.d_k;
    c.d_v = m.d_v;
    return c;
}

CausalDecoder::CausalDecoder(const DecoderConfig& cfg, const InitSpec& init, uint64_t seed) : cfg_(cfg.resolved()) {
    stack = TransformerStack(StackConfig{.d_model = cfg_.d_model,
                                         .heads = cfg_.heads,
                                         .d_k = cfg_.d_k,
                                         .d_v = cfg_.d_v,
                                         .layers = cfg_.layers,
                                         .d_ff = cfg_.d_ff,
                                         .causal = true,
                                         .norm = NormPlace::None,
                                         .act = MlpActivation::Relu,
                                         .bias = cfg_.bias,
                                         .lm_head = false});
    Rng rng(seed, 0);
    for (StackLayer& L : stack.layers) {
        L.attention.init(init, rng);
        L.fc.init(init, rng);
        L.proj.init(init, rng);
    }
}

KvCache CausalDecoder::make_cache(int64_t batch) const { return stack.make_cache(batch); }

namespace {

void check_inference(const AttentionOptions& opt) {
    if (opt.train && opt.dropout > 0.0f)
        throw InputError(
            "the decoder runs in inference mode: dropout would drop different weights one token at a time");
}

}  // namespace

Tensor CausalDecoder::forward(const Tensor& x, const AttentionOptions& opt, std::vector<Tensor>* layer_out) const {
    check_inference(opt);
    if (x.rank() != 3 || x.dim(2) != cfg_.d_model)
        throw ShapeError(fmt::format("the decoder wants x (B, T, {}), got {}", cfg_.d_model, shape_str(x.shape)));
    StackOptions so;
    so.record_attention = false;
    so.record_residual = layer_out != nullptr;
    StackOutput out = stack.forward_vectors(x, so, &opt);
    if (layer_out != nullptr)  // the residual stream after each block
        layer_out->assign(std::make_move_iterator(out.residual.begin() + 1),
                          std::make_move_iterator(out.residual.end()));
    return std::move(out.hidden);
}

Tensor CausalDecoder::step(const Tensor& x_t, KvCache& cache, const AttentionOptions& opt,
                           std::vector<Tensor>* layer_out, const TraceFn* trace) const {
    check_inference(opt);
    if (x_t.rank() != 3 || x_t.dim(1) != 1 || x_t.dim(2) != cfg_.d_model)
        throw ShapeError(fmt::format("a decoder step wants one token x_t (B, 1, {}), got {}", cfg_.d_model,
                                     shape_str(x_t.shape)));
    if (cache.layers() != cfg_.layers)
        throw ShapeError(fmt::format("the cache has {} layers, the decoder {}", cache.layers(), cfg_.layers));
    return stack.step_vector(x_t, cache, nullptr, layer_out, trace, &opt);
}

}  // namespace attn
