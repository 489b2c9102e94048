// app/cmd_model_decoder.hpp: the decoder side of `attn model` (GPT-2-family folders), added
// to the `model` subcommand by cmd_model.cpp.
//   attn model next     --model DIR --text T [--top K] [--bos] [--json]
//   attn model generate --model DIR --text T [--steps N] [--temperature X --seed S] [--json]
//   attn model induction --model DIR [--length N] [--seed S] [--ablate L.H,... [--mode zero|mean]] [--json]
//   attn model cache    --model DIR --text T --dump F      every activation (TransformerLens names)
//   attn model ablate   --model DIR --text T --heads L.H,... [--mode zero|mean] [--json]
//   attn model heads    --model DIR --text T [--ablation [--mode zero|mean]] [--json]
//   attn model attention, entropy, probe --model DIR ...   (on a GPT-2 folder: the decoder versions below)
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attn/io/dump.hpp"
#include "attn/model/heads.hpp"
#include "html_page.hpp"
#include "options.hpp"

namespace attn::cli {

// Adds the decoder subcommands to `model`; the function returned runs the one that was
// parsed (its exit code), or returns nothing when none of them was.
std::function<std::optional<int>()> add_decoder_subcommands(CLI::App& model);

// True when `dir` holds a config.json with model_type "gpt2" (attention then runs the decoder).
bool is_decoder_folder(const std::string& dir);
// `attn model attention` on a decoder: per head, the weight on the first token, the previous
// token and itself; a head's heatmap with layer (and head) >= 0; --svg, --dump and --html as
// for the encoder.
struct DecoderAttentionArgs {
    std::string model, text, svg, dump;
    int64_t layer = -1, head = -1;
    bool no_color = false;
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    JsonOut json;  // --json [FILE]: the result object (attn-model-attention)
    HtmlOpts html;
};
int run_decoder_attention(const DecoderAttentionArgs& a);
// `attn model attention --json`: the weights of the layer (or the head) --layer and --head pick,
// as [{layer, head, weights: rows}] (empty without --layer), for either architecture's result.
nlohmann::json picked_weights_json(const std::vector<Tensor>& attentions, int64_t layer, int64_t head);

// `attn model entropy` on a decoder: each head's mean normalised entropy under the causal mask
// (row i over ln(i + 1)), trained vs a random GPT-2 of the same config, and near-duplicate heads.
struct DecoderEntropyArgs {
    std::string model, text;
    uint64_t seed = 0;
    double dup = 0;
    JsonOut json;
};
int run_decoder_entropy(const DecoderEntropyArgs& a);
// `attn model probe` on a decoder: every head ranked by the weight from one word to candidate
// words (WORD, N-th occurrence), found in the text the BPE tokens spell.
struct DecoderProbeArgs {
    std::string model, text;
    std::string from;
    int from_n = 1;
    std::vector<std::string> to;  // as the user wrote them (WORD or WORD@N)
    std::vector<std::pair<std::string, int>> to_words;
    int64_t top = 0;
    JsonOut json;
};
int run_decoder_probe(const DecoderProbeArgs& a);

// The probe's report, the same for the encoder and a decoder: the ranked heads, the mean weight
// and the heads preferring each candidate as JSON fields, and the ranked table (the first `top`
// rows, all when top is 0) with a line per candidate; after[c] adds the causal mask's note.
void add_probe_json(nlohmann::ordered_json& j, const ProbeRanking& r);
void print_probe_ranking(const TextOut& text, const std::vector<std::string>& to, const ProbeRanking& r, int64_t top,
                         const std::vector<bool>& after);

}  // namespace attn::cli
