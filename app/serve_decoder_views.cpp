// app/serve_decoder_views.cpp: the /decoder page's sampling knobs and its views of the
// activation cache (see serve_decoder_views.hpp).
#include "serve_decoder_views.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "attn/model/gpt2.hpp"

namespace attn::cli {
namespace {

using nlohmann::json;

// The L2 norm of each of the T rows of a (1, T, D) tensor, in double.
std::vector<float> row_norms(const Tensor& x) {
    const int64_t D = x.dim(-1), T = x.numel() / D;
    std::vector<float> out(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
        double s = 0;
        for (int64_t k = 0; k < D; ++k) s += static_cast<double>(x.ptr()[t * D + k]) * x.ptr()[t * D + k];
        out[static_cast<size_t>(t)] = static_cast<float>(std::sqrt(s));
    }
    return out;
}

// The first `dims` entries of each row of a (1, T, D) tensor.
json leading_dims(const Tensor& x, int64_t dims) {
    const int64_t D = x.dim(-1), T = x.numel() / D;
    json rows = json::array();
    for (int64_t t = 0; t < T; ++t) rows.push_back(std::vector<float>(x.ptr() + t * D, x.ptr() + t * D + dims));
    return rows;
}

}  // namespace

std::vector<float> sampling_probs(const float* logits, int64_t V, double temperature, int64_t top_k, double top_p) {
    std::vector<float> p(static_cast<size_t>(V), 0.0f);
    if (temperature == 0.0) {
        p[static_cast<size_t>(std::max_element(logits, logits + V) - logits)] = 1.0f;
        return p;
    }
    const std::vector<float> full = softmax_probs(logits, V, temperature);
    std::vector<int32_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return full[static_cast<size_t>(a)] > full[static_cast<size_t>(b)];
    });
    const int64_t k = top_k > 0 ? std::min(top_k, V) : V;
    double kept_mass = 0;
    for (int64_t i = 0; i < k; ++i) kept_mass += full[static_cast<size_t>(order[static_cast<size_t>(i)])];
    // top-p over the top-k renormalised: keep while the mass before a token is below top_p
    double before = 0, total = 0;
    int64_t kept = 0;
    for (; kept < k; ++kept) {
        if (kept > 0 && before >= top_p) break;
        before += full[static_cast<size_t>(order[static_cast<size_t>(kept)])] / kept_mass;
    }
    for (int64_t i = 0; i < kept; ++i) total += full[static_cast<size_t>(order[static_cast<size_t>(i)])];
    for (int64_t i = 0; i < kept; ++i) {
        const size_t id = static_cast<size_t>(order[static_cast<size_t>(i)]);
        p[id] = static_cast<float>(full[id] / total);
    }
    return p;
}

int32_t sample_from(const std::vector<float>& p, uint64_t seed) {
    Rng rng(seed, 0);
    const double u = rng.uniform_double();
    double acc = 0;
    int32_t id = -1;
    for (size_t i = 0; i < p.size(); ++i) {
        if (p[i] <= 0.0f) continue;
        id = static_cast<int32_t>(i);
        acc += p[i];
        if (u < acc) break;
    }
    return id;
}

json decoder_views(const ActivationCache& cache, int64_t layers, int64_t layer) {
    const Tensor& tok = cache.at("hook_embed");
    const Tensor& pos = cache.at("hook_pos_embed");
    const int64_t dims = std::min<int64_t>(16, tok.dim(-1));
    Tensor sum = tok;
    for (int64_t i = 0; i < sum.numel(); ++i) sum.ptr()[i] += pos.ptr()[i];
    json embeddings = {{"token_norm", row_norms(tok)}, {"position_norm", row_norms(pos)}, {"sum_norm", row_norms(sum)},
                       {"dims", dims},  {"token", leading_dims(tok, dims)},    {"position", leading_dims(pos, dims)}};
    json residual = json::array(), attn_out = json::array(), mlp_out = json::array();
    residual.push_back(row_norms(cache.at("blocks.0.hook_resid_pre")));
    for (int64_t l = 0; l < layers; ++l) {
        const std::string b = fmt::format("blocks.{}.", l);
        residual.push_back(row_norms(cache.at(b + "hook_resid_post")));
        attn_out.push_back(row_norms(cache.at(b + "hook_attn_out")));
        // an attention-only block has no MLP: nothing added
        mlp_out.push_back(cache.tensors.count(b + "hook_mlp_out") ? json(row_norms(cache.at(b + "hook_mlp_out")))
                                                                  : json(nullptr));
    }
    const Tensor& w = cache.at(fmt::format("blocks.{}.attn.hook_pattern", layer));  // (1, H, T, T)
    const int64_t H = w.dim(1), T = w.dim(2);
    json pattern = json::array();
    for (int64_t h = 0; h < H; ++h) {
        json rows = json::array();
        for (int64_t i = 0; i < T; ++i) {
            const float* r = w.ptr() + (h * T + i) * T;
            rows.push_back(std::vector<float>(r, r + T));
        }
        pattern.push_back(std::move(rows));
    }
    return {{"embeddings", embeddings}, {"residual", residual}, {"attn_out", attn_out},
            {"mlp_out", mlp_out},       {"layer", layer},       {"pattern", pattern}};
}

}  // namespace attn::cli
