// The causal decoder that runs on a KV cache (see attn/nn/kv_cache.hpp; the cache: kv_store.cpp).
#include "attn/nn/kv_cache.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

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
