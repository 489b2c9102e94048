// app/cli_errors.hpp: what `attn` says when the command line itself is wrong, in the one format of
// docs/errors.md (`attn: error: OPTION: rule`): an unknown option or command with the nearest names
// ("did you mean"), a hint where the concept has another name in that command (decode's T is
// --steps), and CLI11's own parse errors reworded into that format.
#pragma once

#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

namespace attn::cli {

// Edit distance with a swap of two neighbouring letters as one edit (optimal string
// alignment), for "did you mean": "froward" is 1 from "forward", "--sqe" 1 from "--seq".
size_t edit_distance(const std::string& a, const std::string& b);

// The command the words of argv name: attn itself, a command, or a command's command
// (`attn model attention`); its name as typed after "attn" ("model attention").
const CLI::App& named_command(const CLI::App& app, int argc, const char* const* argv);
std::string command_name(const CLI::App& cmd);

// "" or the one line for a command with commands of its own given none, or one it lacks:
// `attn model nxt` -> "unknown command 'model nxt'; did you mean 'model next'? (model's commands: ...)".
std::string subcommand_error(const CLI::App& app, int argc, const char* const* argv);

// The one line for a parse error of CLI11: an option the command lacks first ("--sed: not an option
// of attn forward; did you mean --seed?"), else CLI11's message in the documented format.
std::string parse_error_line(const CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv);

}  // namespace attn::cli
