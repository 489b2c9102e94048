// app/serve_decoder_views.hpp: the /decoder page's views of one forward pass, computed from
// the library's activation cache (the tensors `attn model cache --dump` writes), and its
// sampling knobs (temperature, top-k, top-p), which the CLI's `attn model generate` has only
// the first of.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/nn/stack.hpp"

namespace attn::cli {

// The distribution the Sample button draws from: softmax(logits / temperature), then the
// top_k most likely tokens kept (0: all), then the smallest set of the most likely whose
// mass reaches top_p (1: all; the first token always kept), renormalised. Ties go to the
// lower id. temperature 0 (greedy): 1 on the arg max. The V probabilities, 0 where cut.
std::vector<float> sampling_probs(const float* logits, int64_t V, double temperature, int64_t top_k, double top_p);

// One draw from `p` as `attn model generate` draws its first step: Rng(seed, 0)'s uniform
// double through the inverse CDF over the ids in order (the last id with p > 0 catches
// rounding). Greedy (temperature 0): the arg max of p.
int32_t sample_from(const std::vector<float>& p, uint64_t seed);

// The views of one forward pass (cache recorded with StackOptions::cache), T tokens:
//   embeddings {token_norm [T], position_norm [T], sum_norm [T], dims (how many leading
//     dimensions follow), token [T][dims], position [T][dims]}: wte[id] and wpe[t]
//     (hook_embed, hook_pos_embed), their L2 norms and their first dimensions;
//   residual [L + 1][T]: the L2 norm of the residual stream entering block 0 and after each
//     block (hook_resid_pre of block 0, hook_resid_post of each block);
//   attn_out [L][T], mlp_out [L][T]: the L2 norms of what each block's attention and MLP add
//     to the stream (hook_attn_out, hook_mlp_out);
//   pattern [H][T][T]: layer `layer`'s weights, row i = query i (attn.hook_pattern).
nlohmann::json decoder_views(const ActivationCache& cache, int64_t layers, int64_t layer);

}  // namespace attn::cli
