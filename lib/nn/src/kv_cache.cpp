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
        throw InputError(fmt::format("a KV cache needs layers, batch, heads, d_k and d_v of at least 1, got {}, {}, {}, {}, {}",
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
        ks[static_cast<size_t>(bh)].insert(ks[static_cast<size_t>(bh)].end(), k.ptr() + bh * d_k_, k.ptr() + (bh + 1) * d_k_);
        vs[static_cast<size_t>(bh)].insert(vs[static_cast<size_t>(bh)].end(), v.ptr() + bh * d_v_, v.ptr() + (bh + 1) * d_v_);
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
    Rng rng(seed, 0);
    for (int64_t l = 0; l < cfg_.layers; ++l) {
        DecoderBlock b{MultiHeadAttention(MhaConfig{cfg_.d_model, cfg_.heads, cfg_.d_k, cfg_.d_v, cfg_.bias}.resolved()),
                       Linear(cfg_.d_model, cfg_.d_ff, cfg_.bias), Linear(cfg_.d_ff, cfg_.d_model, cfg_.bias)};
        b.attention.init(init, rng);
        b.ffn_in.init(init, rng);
        b.ffn_out.init(init, rng);
        blocks.push_back(std::move(b));
    }
}

KvCache CausalDecoder::make_cache(int64_t batch) const {
    return KvCache(cfg_.layers, batch, cfg_.heads, cfg_.d_k, cfg_.d_v);
}

namespace {

void check_inference(const AttentionOptions& opt) {
    if (opt.train && opt.dropout > 0.0f)
        throw InputError("the decoder runs in inference mode: dropout would drop different weights one token at a time");
}

// h + W_2 relu(W_1 h + b_1) + b_2, token by token.
Tensor feed_forward(const DecoderBlock& b, const Tensor& h) {
    Tensor f = b.ffn_in.forward(h);
    for (float& v : f.data) v = std::max(v, 0.0f);
    Tensor out = b.ffn_out.forward(f);
    for (size_t k = 0; k < out.data.size(); ++k) out.data[k] += h.data[k];
    return out;
}

}  // namespace

Tensor CausalDecoder::forward(const Tensor& x, const AttentionOptions& opt, std::vector<Tensor>* layer_out) const {
    check_inference(opt);
    if (x.rank() != 3 || x.dim(2) != cfg_.d_model)
        throw ShapeError(fmt::format("the decoder wants x (B, T, {}), got {}", cfg_.d_model, shape_str(x.shape)));
    if (layer_out != nullptr) layer_out->clear();
    Tensor cur = x;
    const Mask causal = Mask::make_causal();
    for (const DecoderBlock& b : blocks) {
        Tensor h = b.attention.forward(cur, causal, opt);
        for (size_t k = 0; k < h.data.size(); ++k) h.data[k] += cur.data[k];
        cur = feed_forward(b, h);
        if (layer_out != nullptr) layer_out->push_back(cur);
    }
    return cur;
}

Tensor CausalDecoder::step(const Tensor& x_t, KvCache& cache, const AttentionOptions& opt, std::vector<Tensor>* layer_out,
                           const TraceFn* trace) const {
    check_inference(opt);
    if (x_t.rank() != 3 || x_t.dim(1) != 1 || x_t.dim(2) != cfg_.d_model)
        throw ShapeError(fmt::format("a decoder step wants one token x_t (B, 1, {}), got {}", cfg_.d_model,
                                     shape_str(x_t.shape)));
    if (cache.layers() != cfg_.layers)
        throw ShapeError(fmt::format("the cache has {} layers, the decoder {}", cache.layers(), cfg_.layers));
    if (layer_out != nullptr) layer_out->clear();
    const int64_t H = cfg_.heads;
    auto emit = [&](std::string name, std::string formula, const Tensor& t) {
        if (trace != nullptr) (*trace)(TraceEvent{std::move(name), std::move(formula), t.shape, &t});
    };
    Tensor cur = x_t;
    for (size_t l = 0; l < blocks.size(); ++l) {
        const DecoderBlock& b = blocks[l];
        const MultiHeadAttention& m = b.attention;
        const Tensor q = split_heads(m.q_proj.forward(cur), H);  // (B, H, 1, Dk)
        const Tensor k = split_heads(m.k_proj.forward(cur), H);  // (B, H, 1, Dk)
        const Tensor v = split_heads(m.v_proj.forward(cur), H);  // (B, H, 1, Dv)
        cache.append(static_cast<int64_t>(l), k, v);
        const Tensor K = cache.keys(static_cast<int64_t>(l));    // (B, H, t+1, Dk)
        const Tensor V = cache.values(static_cast<int64_t>(l));  // (B, H, t+1, Dv)
        // The one query sees every cached key: the causal mask is the cache's length.
        const Tensor a = attention_reference(q, K, V, Mask::none(), opt);  // (B, H, 1, Dv)
        Tensor h = m.o_proj.forward(merge_heads(a));                         // (B, 1, D)
        for (size_t i = 0; i < h.data.size(); ++i) h.data[i] += cur.data[i];
        cur = feed_forward(b, h);
        if (trace != nullptr) {
            const std::string L = std::to_string(l);
            emit("q" + L, "x_t·W_qᵀ + b_q, split", q);
            emit("K" + L, "cache ++ (x_t·W_kᵀ + b_k)", K);
            emit("V" + L, "cache ++ (x_t·W_vᵀ + b_v)", V);
            emit("attn" + L, "softmax(q·Kᵀ·scale)·V, no mask", a);
            emit("out" + L, "h + FFN(h), h = x_t + merge(attn)·W_oᵀ", cur);
        }
        if (layer_out != nullptr) layer_out->push_back(cur);
    }
    return cur;
}

}  // namespace attn
