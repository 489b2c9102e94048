// app/cli.cpp: registers every subcommand, parses, runs, maps errors to exit codes.
//   0 success, 2 bad input (one line on stderr), 1 internal error.
// Standard output is part of the contract: a closed stdout, or one that cannot
// be written (a full disk, /dev/full), is exit 2 with one line. A reader that
// goes away (`attn lessons | head -1`) ends attn by SIGPIPE, quietly, as cat
// and grep do: SIGPIPE keeps its default action. The man page and the option table are in
// cli_manual.cpp, the shell completions in cli_completion.cpp.
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
#include <string>
#include <vector>
#include <unistd.h>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/numeric_error.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/model/bert.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/cuda/cuda.hpp"
#include "cli_errors.hpp"
#include "command.hpp"
#include "options.hpp"

#ifndef ATTN_VERSION
#define ATTN_VERSION "0.1.0"
#endif
#ifndef ATTN_GIT_COMMIT
#define ATTN_GIT_COMMIT "unknown"
#endif

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
// An option whose value may be left out (--rope [BASE], --json [FILE]) reads `--rope ''` and
// `--rope=` as `--rope` alone, so the words typed (raw_args) tell an empty value apart.
static std::vector<std::string>& raw_args() {
    static std::vector<std::string> args;
    return args;
}

static bool typed_empty(const CLI::Option& opt) {
    const auto& a = raw_args();
    for (const std::string& name : opt.get_lnames())
        for (size_t i = 0; i < a.size(); ++i)
            if (a[i] == "--" + name + "=" || (a[i] == "--" + name && i + 1 < a.size() && a[i + 1].empty())) return true;
    return false;
}

// The name an error gives an option. CLI11 names a hidden one (an old spelling, deprecated_alias in
// options.hpp) "": it is named by the option it stands for ("deprecated spelling of --d-k").
static std::string shown_name(const CLI::Option& opt) {
    if (std::string n = opt.get_name(); !n.empty()) return n;
    constexpr std::string_view kOld = "deprecated spelling of ";
    if (const std::string& d = opt.get_description(); d.rfind(kOld, 0) == 0) return d.substr(kOld.size());
    if (!opt.get_lnames().empty()) return "--" + opt.get_lnames().front();
    return opt.get_snames().empty() ? std::string("an option") : "-" + opt.get_snames().front();
}

static void refuse_empty_values(const CLI::App& app) {
    for (const CLI::Option* opt : app.get_options()) {
        if (empty_allowed().count(opt) != 0) continue;
        if (opt->get_expected_min() > 0) {
            for (const std::string& value : opt->results())
                if (value.empty()) throw InputError(fmt::format("{}: the value is empty", shown_name(*opt)));
        } else if (opt->get_expected_max() > 0 && opt->count() > 0 && typed_empty(*opt)) {
            throw InputError(
                fmt::format("{}: the value is empty (leave the value out for the default)", shown_name(*opt)));
        }
    }
    for (const CLI::App* sub : app.get_subcommands()) refuse_empty_values(*sub);
}

static int usage_error(const std::string& msg) {
    std::fflush(stdout);
    // one line whatever the input held: a newline, a NUL or another control byte of a value is shown escaped
    std::string line;
    for (const char c : msg)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            line += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
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

std::string build_commit() { return ATTN_GIT_COMMIT; }

std::string command_line() {
    std::string line = "attn";
    for (const std::string& a : raw_args()) {
        const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_=./:,+@%") == std::string::npos;
        if (plain) {
            line += " " + a;
            continue;
        }
        std::string q = "'";
        for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += " " + q + "'";
    }
    return line;
}

std::string compiler_name() {
#if defined(__clang__)
    return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    return fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    return "unknown";
#endif
}

// attn --version: the version, the commit it was built from, the compiler, CUDA, and the
// kernels this CPU runs: the ISA, the flash kernel, the flash-bf16 path, the GEMMs of the
// pretrained encoder and of training.
static std::string version_text() {
    return fmt::format(
        "attn {}\ncommit {}\ncompiler {}\nCUDA {}\nkernels {}: flash {}, flash-bf16 {}, encoder GEMM {}, "
        "training GEMM {}",
        ATTN_VERSION, build_commit(), compiler_name(),
        cuda_compiled() ? "compiled in" : "not compiled in (cmake --preset cuda)", cpu_kernel_summary(),
        flash_kernels().front(), flash_bf16_path(), bert_gemm_path(BertOptions{}),
        gemm_choice_name(nn::training_gemm()));
}

std::unique_ptr<CLI::App> make_app(std::map<CLI::App*, Runner>& runners) {
    auto app = std::make_unique<CLI::App>(
        "attn: see Transformer attention work, formula by formula, with live numbers.\n"
        "Shapes: B batch, T sequence, D d_model, H heads, Dk, Dv.",
        "attn");
    app->require_subcommand(1);
    app->set_version_flag("--version", [] { return version_text(); });  // ATTN_ISA read when asked
    app->footer("Run `attn COMMAND --help` for a command's options. Start with `attn tour`.");

    auto specs = registry();
    std::stable_sort(specs.begin(), specs.end(),
                     [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
    for (auto& spec : specs) {
        CLI::App* sub = app->add_subcommand(spec.name, spec.summary);
        runners[sub] = spec.setup(*sub);
    }
    add_shared_vocabulary(*app);  // --threads and --seed on every command that computes (options.hpp)
    normalise_placeholders(*app);
    return app;
}

void check_parsed(const CLI::App& app) { refuse_empty_values(app); }

static int run_parsed(int argc, const char* const* argv) {
    std::map<CLI::App*, Runner> runners;
    const std::unique_ptr<CLI::App> owner = make_app(runners);
    CLI::App& app = *owner;
    if (argc == 2 && std::string(argv[1]) == "--cli-json") {  // hidden: the option table (command.hpp)
        fmt::print("{}\n", cli_table_json(app));
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "--man") {  // hidden: the man page attn.1, made at build time
        fmt::print("{}", man_page(app));
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "--completion-bash") {  // hidden: the bash completion, likewise
        fmt::print("{}", bash_completion(app));
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "--completion-zsh") {  // hidden: the zsh completion, likewise
        fmt::print("{}", zsh_completion(app));
        return 0;
    }
    if (argc <= 1) {  // bare `attn`: the usage, as git does (exit 0 on a terminal, 2 when scripted)
        const bool tty = stdout_is_tty();
        fmt::print(tty ? stdout : stderr, "{}", app.help());
        return tty ? 0 : 2;
    }
    if (argv[1][0] != '-') {  // an unknown command: the nearest names
        const std::string given = argv[1];
        std::vector<std::string> names, near;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
            names.push_back(sub->get_name());
        if (std::find(names.begin(), names.end(), given) == names.end()) {
            for (const std::string& n : names)
                if (edit_distance(given, n) <= std::max<size_t>(1, n.size() / 3) || n.rfind(given, 0) == 0)
                    near.push_back(n);
            std::string all;
            for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
            return usage_error(near.empty() ? fmt::format("unknown command '{}' (commands: {})", given, all)
                                            : fmt::format("unknown command '{}'; did you mean {}?", given,
                                                          fmt::format("'{}'", fmt::join(near, "' or '"))));
        }
    }
    if (const std::string wrong = subcommand_error(app, argc, argv); !wrong.empty()) return usage_error(wrong);
    raw_args().assign(argv + 1, argv + argc);
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
            return usage_error(parse_error_line(app, e, argc, argv));
        }
        check_parsed(app);
        apply_threads(app);
        isa_cap();  // a bad ATTN_ISA is refused before any work
        for (auto& [sub, run] : runners)
            if (sub->parsed()) return run();
        return usage_error("no command given (try `attn --help`)");
    } catch (const InputError& e) {
        return usage_error(e.what());
    } catch (const std::bad_alloc&) {
        return usage_error("out of memory: the requested sizes need more memory than this machine has");
    } catch (const NumericError& e) {
        (void)usage_error(e.what());  // valid input, a result that is not a number: said, never printed
        return 1;
    } catch (const std::exception& e) {
        // a write to stdout that failed (a full disk, /dev/full) is the environment's, not attn's
        if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)
            return usage_error(fmt::format("cannot write to standard output ({})", e.what()));
        fmt::print(stderr, "attn: internal error: {}\n", e.what());
        return 1;
    }
}

}  // namespace attn::cli
