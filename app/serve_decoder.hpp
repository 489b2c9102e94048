// app/serve_decoder.hpp: the lab's /decoder page computes with this: a GPT-2-family decoder
// (default: the shipped data/decoders/macbeth-char; `attn serve --model DIR` for any GPT-2
// folder) run on a prompt, as `attn model next` runs it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attn::cli {

// Request: text (a string, 1..kLabMaxTextBytes bytes), top (how many next tokens, 1..50,
// default 10), temperature (0: greedy, or 0.01..100; default 1), top_k (0: off, the default,
// or how many of the most likely tokens sampling keeps), top_p (in (0, 1]; 1, the default:
// off), seed, layer (whose full weights `pattern` holds; default 0), ablate [[layer, head], ...].
// Answer "attn-lab-decoder": model (its folder), tokens [{id, text}], next [{rank, id, text,
// prob, logit}] (the entries of `attn model next --json`, sorted by probability), command (that
// `attn model next` command), next_at_temperature (the same entries' probabilities at the
// temperature; null when greedy), next_sampled (their probabilities in the distribution the
// Sample button draws from: temperature, then top-k, then top-p, renormalised; 0 where cut),
// sample {id, text, prob, command}: the token one step of `attn model generate --steps 1
// --temperature T --seed S` chooses, or with top-k or top-p on the same draw from the cut
// distribution (command null: generate has no top-k or top-p) (sample null when the prompt
// fills the model's positions), layers and heads (the model's), attention [layer][head][T] (each
// head's weights of the last query over the tokens, as `attn model generate --steps 1
// --attention --json` records them), lens [{layer, id, text, prob}] (the logit lens: each block's
// residual stream at the last position through LN_f and the LM head), cache_command (the
// `attn model cache --dump -` command whose tensors hold the numbers below) and
// decoder_views()'s embeddings, residual, attn_out, mlp_out, layer and pattern; with ablate,
// ablated {heads, top {id, text, prob}, prob_clean_top, command}: the next token with those
// heads' outputs zeroed, as `attn model ablate --heads L.H,... --json` gives it. LabError
// naming the field.
nlohmann::json lab_decoder(const nlohmann::json& request, const std::string& model_dir);

}  // namespace attn::cli
