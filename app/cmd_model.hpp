// app/cmd_model.hpp: the verb families of `attn model`, one file each, added to the `model`
// subcommand by cmd_model.cpp. Each add_* adds its subcommands and returns a function that runs
// the one that was parsed (its exit code), or returns nothing when none of them was.
//   cmd_model_attention.cpp  attention, entropy, probe   any model (ModelText: encoder or decoder)
//   cmd_model_embed.cpp      embed, bench                the encoder's sentence embeddings and speed
//   cmd_model_generate.cpp   next, generate              a decoder's predictions
//   cmd_model_circuits.cpp   induction, cache, ablate, heads   inside a decoder
//   model_fetch.cpp          fetch                       the pretrained encoder
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attn/core/tensor.hpp"
#include "attn/model/heads.hpp"
#include "options.hpp"

namespace attn::cli {

using ModelRunner = std::function<std::optional<int>()>;
struct DecoderLoad;

ModelRunner add_attention_subcommands(CLI::App& model);
ModelRunner add_embed_subcommands(CLI::App& model);
ModelRunner add_generate_subcommands(CLI::App& model);
ModelRunner add_circuit_subcommands(CLI::App& model);
// --model, --text and --bos of a decoder's own verbs (next, generate, cache, ablate, heads).
void add_decoder_text_options(CLI::App* sub, DecoderLoad& o);

// `attn model attention --json`: the weights of the layer (or the head) --layer and --head pick,
// as [{layer, head, weights: rows}] (empty without --layer).
nlohmann::json picked_weights_json(const std::vector<Tensor>& attentions, int64_t layer, int64_t head);
// The probe's report: the ranked heads, the mean weight and the heads preferring each candidate as
// JSON fields, and the ranked table (the first `top` rows, all when top is 0) with a line per
// candidate; after[c] adds the causal mask's note.
void add_probe_json(nlohmann::ordered_json& j, const ProbeRanking& r);
void print_probe_ranking(const TextOut& text, const std::vector<std::string>& to, const ProbeRanking& r, int64_t top,
                         const std::vector<bool>& after);

}  // namespace attn::cli
