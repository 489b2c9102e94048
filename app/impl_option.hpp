// app/impl_option.hpp: the --impl option of `attn forward` and `attn bench`.
// Its valid names, the help text and the reason a backend cannot run here all
// come from the library's backend table (attn/nn/backend.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "attn/nn/backend.hpp"

namespace attn::cli {

// Accepts a name from the backend table ("flash"), or with list = true a
// comma-separated list of them (items as split_commas gives them; an empty item
// names no backend); CLI11 reports anything else
// as "--impl: unknown implementation 'x' (one of: reference, flash, ...)".
CLI::Validator backend_validator(bool list = false);
// The backend a validated name denotes.
Backend backend_of(std::string_view name);
// The backends of a validated list, in its order.
std::vector<Backend> backends_of(std::string_view list);
// The option's help text: `lead`, then one line per backend (name, device,
// precision, whether it records the intermediates, what it is).
std::string backend_help(std::string_view lead);
// Throws InputError("<opt>: <name> cannot run here: <reason>") unless the
// backend can run on this build and machine.
void require_available(std::string_view opt, Backend b);

}  // namespace attn::cli
