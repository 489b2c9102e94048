// attn/model/heads.hpp: reading the attention heads of a model (C32, C34).
//
// `attn model` and the "Real heads" lesson read a forward pass with these, so
// every figure has one definition. They take the weights a forward pass
// recorded, one (B, H, T, T) tensor per layer (BertOutput::attentions):
//   head figures     per layer and head, the mean normalised entropy of its
//                    rows; per layer, the (H, H) mean Jensen-Shannon divergence
//                    between its heads (attn/core/stats.hpp)
//   near-duplicates  pairs of heads of one layer whose divergence is under a
//                    threshold: heads that look at the same keys
//   sinks            where one layer's weight goes: the share received by
//                    [CLS], [SEP], punctuation and every other token
//   probe            how much some query tokens attend to candidate tokens
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// ---- head figures and near-duplicate heads

struct HeadFigures {
    std::vector<std::vector<double>> entropy;  // [layer][head] mean normalised entropy: 1 uniform, 0 one-hot
    std::vector<Tensor> similarity;            // [layer] (H, H) mean JS divergence, nats: 0 identical, ln 2 disjoint
};
// Over every row of the batch that the mask leaves at least 2 keys.
HeadFigures head_figures(const std::vector<Tensor>& attentions, const Mask& mask);

// Two heads whose mean JS divergence is under this (nats, of at most ln 2) count as near-duplicates.
constexpr double kNearDuplicateJs = 0.05;

struct HeadPair {
    int64_t a = 0, b = 0;  // heads a < b of one layer
    double js = 0;         // their mean JS divergence, nats
};
// Every pair of a layer's heads, from its (H, H) similarity, most alike first
// (equal divergences in (a, b) order).
std::vector<HeadPair> head_pairs(const Tensor& similarity);
// The pairs under `threshold`, most alike first.
std::vector<HeadPair> near_duplicate_heads(const Tensor& similarity, double threshold = kNearDuplicateJs);

// ---- attention sinks

// The tokens that soak up weight while meaning little: BERT's [CLS] and [SEP],
// and punctuation (a token of one character that is_bert_punctuation accepts).
enum class SinkKind { Cls, Sep, Punct, Other };
SinkKind sink_kind(std::string_view token);

// Mean weight each key receives from the real query rows, per head:
// weights (B, H, T, T) -> (H, T), over rows i < len of batch row b.
Tensor mean_received(const Tensor& weights, int64_t b, int64_t len);

// Where one layer's weight goes in batch row b, whose real tokens are `tokens`
// (keys past them, padding, are not counted: the key mask gives them nothing).
struct Sinks {
    Tensor received;              // (H, T): mean_received over the real tokens
    std::vector<double> per_key;  // [len]: received averaged over heads (sums to 1)
    double cls = 0, sep = 0, punct = 0, other = 0;  // per_key summed by sink_kind
    size_t top = 0;               // the key that receives the most (the first, on ties)
};
Sinks layer_sinks(const Tensor& weights, int64_t b, const std::vector<std::string>& tokens);

// ---- the probe

// How much the query tokens `from` attend to each candidate group `to[c]`:
// the weight summed over the candidate's tokens, averaged over the query's
// tokens. One row per (layer, head), in layer-major order.
struct ProbeRow {
    int64_t layer = 0, head = 0;
    std::vector<double> weight;  // one per candidate
};
std::vector<ProbeRow> probe_heads(const std::vector<Tensor>& attentions, int64_t b, const std::vector<int64_t>& from,
                                  const std::vector<std::vector<int64_t>>& to);

// The probe's rows ranked by the weight on the first candidate (ties keep layer-major
// order), with per candidate the weight averaged over all heads and the number of heads
// whose largest weight is on it (the first candidate on ties).
struct ProbeRanking {
    std::vector<ProbeRow> rows;
    std::vector<double> mean_weight;
    std::vector<size_t> heads_preferring;
};
ProbeRanking rank_probe(std::vector<ProbeRow> rows);
// The candidate a row gives the most weight (the first on ties).
size_t preferred_candidate(const ProbeRow& r);

}  // namespace attn
