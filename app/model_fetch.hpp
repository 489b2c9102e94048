// app/model_fetch.hpp: `attn model fetch`: puts the pretrained encoder (all-MiniLM-L6-v2) where attn
// looks for it by default, the per-user data folder ($XDG_DATA_HOME/attn/models/all-MiniLM-L6-v2, else
// ~/.local/share/attn/...), from any folder: downloaded by the fetch helper attn installs
// (share/attn/fetch-model.sh, the checkout's scripts/fetch-model.sh), or copied from a folder the
// user already has (--from DIR), checked first.
#pragma once

#include <functional>
#include <optional>

#include <CLI/CLI.hpp>

namespace attn::cli {

// Adds `fetch` to `attn model`; the returned function runs it when it was parsed (nullopt otherwise).
std::function<std::optional<int>()> add_model_fetch(CLI::App& model);

}  // namespace attn::cli
