// Tests of the KV cache (attn/nn/kv_cache.hpp): one token at a time against the
// cache gives the full causal forward pass's numbers at every step and in every
// layer; the cache grows by one row per token; its bytes follow the formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "attn/core/errors.hpp"
#include "attn/nn/kv_cache.hpp"
#include "test_util.hpp"

using attn::Tensor;

namespace {

// Row t of x (B, T, D) as a (B, 1, D) tensor.
Tensor token(const Tensor& x, int64_t t) {
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
    Tensor out(attn::Shape{B, 1, D});
    for (int64_t b = 0; b < B; ++b)
        std::copy(x.ptr() + (b * T + t) * D, x.ptr() + (b * T + t + 1) * D, out.ptr() + b * D);
    return out;
}

}  // namespace

TEST_CASE("kv cache: decoding one token at a time equals the full causal pass, every step and layer") {
    struct Sizes {
        int64_t heads, layers, dk, dv;
    };
    for (const Sizes& sz : {Sizes{2, 3, 0, 0}, Sizes{4, 2, 3, 5}}) {
        const int64_t heads = sz.heads, layers = sz.layers, dk = sz.dk, dv = sz.dv;
        attn::DecoderConfig cfg;
        cfg.d_model = 16;
        cfg.heads = heads;
        cfg.layers = layers;
        cfg.d_k = dk;
        cfg.d_v = dv;
        const attn::CausalDecoder dec(cfg, attn::InitSpec{}, 11);
        const int64_t B = 2, T = 12;
        const Tensor x = attn::test::randn({B, T, cfg.d_model}, 5);
        const attn::AttentionOptions opt;
        std::vector<Tensor> full;
        (void)dec.forward(x, opt, &full);
        attn::KvCache cache = dec.make_cache(B);
        double worst = 0, scale = 0;
        for (int64_t t = 0; t < T; ++t) {
            std::vector<Tensor> step;
            (void)dec.step(token(x, t), cache, opt, &step);
            REQUIRE(step.size() == static_cast<size_t>(layers));
            CHECK(cache.length() == t + 1);
            for (int64_t l = 0; l < layers; ++l) {
                const Tensor want = token(full[static_cast<size_t>(l)], t);
                for (size_t k = 0; k < want.data.size(); ++k) {
                    worst = std::max(
                        worst, static_cast<double>(std::fabs(step[static_cast<size_t>(l)].data[k] - want.data[k])));
                    scale = std::max(scale, static_cast<double>(std::fabs(want.data[k])));
                }
                CHECK(cache.keys(l).shape == attn::Shape{B, heads, t + 1, dec.config().d_k});
                CHECK(cache.values(l).shape == attn::Shape{B, heads, t + 1, dec.config().d_v});
            }
        }
        MESSAGE("H=" << heads << " layers=" << layers << ": max |step - full| = " << worst << " (values up to " << scale
                     << ")");
        // The same products and sums in a different grouping (a GEMV per token
        // instead of one GEMM): float32 rounding of O(1..10) values over a few
        // layers, a few ulps. 1e-5 relative to the largest value would catch a
        // wrong key (off by one position), which changes values at the 1e-1 level.
        CHECK(worst <= 1e-5 * std::max(1.0, scale));
        // the check can fail: dropping the newest key (as a mask off by one would) changes the output
        CHECK(worst < 1e-3);
    }
}

TEST_CASE("kv cache: a cache that misses a token gives different numbers (the test above can fail)") {
    attn::DecoderConfig cfg;
    cfg.layers = 1;
    const attn::CausalDecoder dec(cfg, attn::InitSpec{}, 3);
    const Tensor x = attn::test::randn({1, 4, cfg.d_model}, 9);
    std::vector<Tensor> full;
    (void)dec.forward(x, {}, &full);
    attn::KvCache cache = dec.make_cache(1);
    (void)dec.step(token(x, 0), cache, {});
    // skip token 1: the cache now lacks its key, so token 2's output is that of another sequence
    const Tensor y = dec.step(token(x, 2), cache, {});
    const Tensor want = token(full[0], 2);
    double diff = 0;
    for (size_t k = 0; k < want.data.size(); ++k)
        diff = std::max(diff, static_cast<double>(std::fabs(y.data[k] - want.data[k])));
    CHECK(diff > 1e-3);
}

TEST_CASE("kv cache: bytes grow linearly with T and shrink by H / H_kv") {
    attn::KvCache c(3, 2, 4, 8, 6);
    CHECK(c.bytes() == 0);
    for (int t = 1; t <= 5; ++t) {
        for (int64_t l = 0; l < 3; ++l) c.append(l, Tensor(attn::Shape{2, 4, 1, 8}), Tensor(attn::Shape{2, 4, 1, 6}));
        CHECK(c.bytes() == 4.0 * 3 * 2 * 4 * t * (8 + 6));
    }
    CHECK(attn::kv_cache_bytes(32, 1, 8, 4096, 128, 128, 2) * 4 == attn::kv_cache_bytes(32, 1, 32, 4096, 128, 128, 2));
    CHECK_THROWS_AS(c.append(0, Tensor(attn::Shape{2, 4, 2, 8}), Tensor(attn::Shape{2, 4, 1, 6})), attn::ShapeError);
    CHECK_THROWS_AS(c.append(3, Tensor(attn::Shape{2, 4, 1, 8}), Tensor(attn::Shape{2, 4, 1, 6})), attn::InputError);
    CHECK_THROWS_AS(attn::KvCache(0, 1, 1, 1, 1), attn::InputError);
    attn::DecoderConfig cfg;
    const attn::CausalDecoder dec(cfg, attn::InitSpec{}, 1);
    attn::AttentionOptions drop;
    drop.train = true;
    drop.dropout = 0.1f;
    attn::KvCache cache = dec.make_cache(1);
    CHECK_THROWS_AS(dec.step(Tensor(attn::Shape{1, 1, 16}), cache, drop), attn::InputError);
    CHECK_THROWS_AS(dec.step(Tensor(attn::Shape{1, 2, 16}), cache, {}), attn::ShapeError);
}
