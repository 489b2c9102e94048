// app/serve_decoder.hpp: the lab's /decoder page computes with this: a GPT-2-family decoder
// (default: the shipped data/decoders/macbeth-char; `attn serve --model DIR` for any GPT-2
// folder) run on a prompt, as `attn model next` runs it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attn::cli {

// Request: text (a string, 1..kLabMaxTextBytes bytes), top (how many next tokens, 1..50,
// default 10). Answer "attn-lab-decoder": model (its folder), tokens [{id, text}], next
// [{rank, id, text, prob, logit}] (the entries of `attn model next --json`, sorted by
// probability) and command (that `attn model next` command). LabError naming the field.
nlohmann::json lab_decoder(const nlohmann::json& request, const std::string& model_dir);

}  // namespace attn::cli
