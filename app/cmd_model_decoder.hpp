// app/cmd_model_decoder.hpp: the decoder side of `attn model` (GPT-2-family folders), added
// to the `model` subcommand by cmd_model.cpp.
//   attn model next     --model DIR --text T [--top K] [--bos] [--json]
//   attn model generate --model DIR --text T [--steps N] [--temperature X --seed S] [--json]
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace attn::cli {

// Adds the decoder subcommands to `model`; the function returned runs the one that was
// parsed (its exit code), or returns nothing when none of them was.
std::function<std::optional<int>()> add_decoder_subcommands(CLI::App& model);

}  // namespace attn::cli
