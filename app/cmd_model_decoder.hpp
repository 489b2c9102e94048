// app/cmd_model_decoder.hpp: the decoder side of `attn model` (GPT-2-family folders), added
// to the `model` subcommand by cmd_model.cpp.
//   attn model next     --model DIR --text T [--top K] [--bos] [--json]
//   attn model generate --model DIR --text T [--steps N] [--temperature X --seed S] [--json]
//   attn model induction --model DIR [--length N] [--seed S] [--json]
//   attn model attention --model DIR --text T [--layer L [--head H]] [--svg F] [--dump F]   (on a GPT-2 folder)
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attn/io/dump.hpp"

namespace attn::cli {

// Adds the decoder subcommands to `model`; the function returned runs the one that was
// parsed (its exit code), or returns nothing when none of them was.
std::function<std::optional<int>()> add_decoder_subcommands(CLI::App& model);

// True when `dir` holds a config.json with model_type "gpt2" (attention then runs the decoder).
bool is_decoder_folder(const std::string& dir);
// `attn model attention` on a decoder: per head, the weight on the first token, the previous
// token and itself; a head's heatmap with layer (and head) >= 0; --svg and --dump as for the
// encoder.
struct DecoderAttentionArgs {
    std::string model, text, svg, dump;
    int64_t layer = -1, head = -1;
    bool no_color = false;
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
};
int run_decoder_attention(const DecoderAttentionArgs& a);

}  // namespace attn::cli
