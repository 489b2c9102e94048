// app/command.hpp: how a subcommand plugs into `attn`.
//
// Each app/cmd_*.cpp defines one subcommand: an options struct, a setup that
// binds its flags on the CLI11 subcommand, and a run function that calls the
// library. It registers itself with a file-scope `Command` object named after the command
// (the command files build in unity batches, several to one compile: a file-scope name,
// in an anonymous namespace or not, must be unique across app/):
//
//   static attn::cli::Command forward_cmd{"forward", "Run multi-head attention ...", 10,
//       [](CLI::App& sub) -> attn::cli::Runner { auto o = std::make_shared<Opts>(); ...
//           return [o] { return run_forward(*o); }; }};
//
// Runners return the process exit code. Bad input is reported by throwing
// attn::InputError (or attn::cli::UsageError): main prints one line, exits 2.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attn/core/errors.hpp"

namespace attn::cli {

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App&)>;

struct CommandSpec {
    std::string name, summary;
    int order;  // position in `attn --help`
    Setup setup;
};

std::vector<CommandSpec>& registry();

struct Command {
    Command(std::string name, std::string summary, int order, Setup setup) {
        registry().push_back({std::move(name), std::move(summary), order, std::move(setup)});
    }
};

// Runs the whole CLI (main calls it). Returns the exit code.
int run_cli(int argc, const char* const* argv);

// What this build is, for `attn --version` and the provenance of stored results:
// the commit it was configured from ("unknown" outside git) and the compiler.
std::string build_commit();
std::string compiler_name();
// The command being run, as typed: "attn" and its arguments, each quoted for a POSIX
// shell where it needs it (for the provenance a written model records).
std::string command_line();

// The `attn` app with every registered subcommand, as run_cli builds it; runners
// receives each subcommand's work, to call after a parse (the argv fuzzer only
// parses). check_parsed applies the checks run_cli makes after CLI11's parse
// (an empty value is refused): throws InputError.
std::unique_ptr<CLI::App> make_app(std::map<CLI::App*, Runner>& runners);
void check_parsed(const CLI::App& app);

// The CLI's option table as JSON: every subcommand (nested), each option with its
// long and short names, hidden or not, type, default, value count and help.
// `attn --cli-json` prints it; the vocabulary test, the man page and the shell
// completion are made from it.
std::string cli_table_json(const CLI::App& app);
// The man page attn.1 (roff) and a bash completion script, from the same table:
// `attn --man` and `attn --completion-bash` print them; the build writes them
// beside the binary and `cmake --install` installs them.
std::string man_page(const CLI::App& app);
std::string bash_completion(const CLI::App& app);
// The zsh completion (`attn --completion-zsh`, installed as share/zsh/vendor-completions/_attn).
std::string zsh_completion(const CLI::App& app);

// Marks an option whose empty value means something (an empty --text), so the
// CLI's refusal of empty values lets it through. Returns opt.
CLI::Option* allow_empty(CLI::Option* opt);

// Colour on stdout: only on a TTY, never with NO_COLOR set or --no-color given.
bool stdout_color(bool no_color_flag);
bool stdout_is_tty();

}  // namespace attn::cli
