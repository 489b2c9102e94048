// app/cli.cpp: registers every subcommand, parses, runs, maps errors to exit codes.
//   0 success, 2 bad input (one line on stderr), 1 internal error.
// Standard output is part of the contract: a closed stdout, or one that cannot
// be written (a full disk, /dev/full), is exit 2 with one line. A reader that
// goes away (`attn lessons | head -1`) ends attn by SIGPIPE, quietly, as cat
// and grep do: SIGPIPE keeps its default action.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

#include <fmt/core.h>

#include "command.hpp"

namespace attn::cli {

std::vector<CommandSpec>& registry() {
    static std::vector<CommandSpec> r;
    return r;
}

bool stdout_is_tty() { return isatty(fileno(stdout)) != 0; }

bool stdout_color(bool no_color_flag) {
    if (no_color_flag) return false;
    const char* nc = std::getenv("NO_COLOR");
    if (nc != nullptr && nc[0] != '\0') return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::string(term) == "dumb") return false;
    return stdout_is_tty();
}

std::set<const CLI::Option*>& empty_allowed() {
    static std::set<const CLI::Option*> opts;
    return opts;
}

CLI::Option* allow_empty(CLI::Option* opt) {
    empty_allowed().insert(opt);
    return opt;
}

// CLI11 reads an empty value as 0 for a number and as "not given" for a file
// name: a silent substitution either way. Every option given '' is refused,
// positional arguments included, in `app` and the subcommands it parsed, unless
// its setup marked it allow_empty (an empty --text is a text).
static void refuse_empty_values(const CLI::App& app) {
    for (const CLI::Option* opt : app.get_options())
        if (opt->get_expected_min() > 0 && empty_allowed().count(opt) == 0)
            for (const std::string& value : opt->results())
                if (value.empty()) throw InputError(fmt::format("{}: the value is empty", opt->get_name()));
    for (const CLI::App* sub : app.get_subcommands()) refuse_empty_values(*sub);
}

static int usage_error(const std::string& msg) {
    std::fflush(stdout);
    // one line whatever the input held: a newline, a NUL or another control byte of a value is shown escaped
    std::string line;
    for (const char c : msg)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) line += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else line += c;
    fmt::print(stderr, "attn: error: {}\n", line);
    return 2;
}

static int run_parsed(int argc, const char* const* argv);

int run_cli(int argc, const char* const* argv) {
    // Checked first: a file opened later would take descriptor 1 and receive stdout.
    if (::fcntl(STDOUT_FILENO, F_GETFD) == -1) return usage_error("standard output is closed");
    const int code = run_parsed(argc, argv);
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (code != 0 || (flushed && std::ferror(stdout) == 0)) return code;  // a failure already said its line
    const int e = errno;
    fmt::print(stderr, "attn: error: cannot write to standard output{}\n",
               e != 0 ? fmt::format(" ({})", std::strerror(e)) : std::string());
    return 2;
}

std::unique_ptr<CLI::App> make_app(std::map<CLI::App*, Runner>& runners) {
    auto app = std::make_unique<CLI::App>("attn: see Transformer attention work, formula by formula, with live numbers.\n"
                                          "Shapes: B batch, T sequence, D d_model, H heads, Dk, Dv.",
                                          "attn");
    app->require_subcommand(1);
    app->set_version_flag("--version", "attn 0.1.0");
    app->footer("Run `attn COMMAND --help` for a command's options. Start with `attn tour`.");

    auto specs = registry();
    std::stable_sort(specs.begin(), specs.end(),
                     [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
    for (auto& spec : specs) {
        CLI::App* sub = app->add_subcommand(spec.name, spec.summary);
        runners[sub] = spec.setup(*sub);
    }
    return app;
}

void check_parsed(const CLI::App& app) { refuse_empty_values(app); }

static int run_parsed(int argc, const char* const* argv) {
    std::map<CLI::App*, Runner> runners;
    const std::unique_ptr<CLI::App> owner = make_app(runners);
    CLI::App& app = *owner;
    try {
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            std::string what = e.what();
            std::replace(what.begin(), what.end(), '\n', ' ');
            return usage_error(what);
        }
        check_parsed(app);
        for (auto& [sub, run] : runners)
            if (sub->parsed()) return run();
        return usage_error("no command given (try `attn --help`)");
    } catch (const InputError& e) {
        return usage_error(e.what());
    } catch (const std::bad_alloc&) {
        return usage_error("out of memory: the requested sizes need more memory than this machine has");
    } catch (const std::exception& e) {
        // a write to stdout that failed (a full disk, /dev/full) is the environment's, not attn's
        if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)
            return usage_error(fmt::format("cannot write to standard output ({})", e.what()));
        fmt::print(stderr, "attn: internal error: {}\n", e.what());
        return 1;
    }
}

}  // namespace attn::cli
