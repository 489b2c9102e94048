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
    return fmt::format("attn {}\ncommit {}\ncompiler {}\nCUDA {}\nkernels {}: flash {}, flash-bf16 {}, encoder GEMM {}, "
                       "training GEMM {}",
                       ATTN_VERSION, build_commit(), compiler_name(),
                       cuda_compiled() ? "compiled in" : "not compiled in (cmake --preset cuda)", cpu_kernel_summary(),
                       flash_kernels().front(), flash_bf16_path(), bert_gemm_path(BertOptions{}),
                       gemm_choice_name(nn::training_gemm()));
}

std::unique_ptr<CLI::App> make_app(std::map<CLI::App*, Runner>& runners) {
    auto app = std::make_unique<CLI::App>("attn: see Transformer attention work, formula by formula, with live numbers.\n"
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

static nlohmann::ordered_json app_table(const CLI::App& app) {
    nlohmann::ordered_json j;
    j["name"] = app.get_name();
    j["description"] = app.get_description();
    nlohmann::ordered_json opts = nlohmann::ordered_json::array();
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_lnames().empty() && o->get_snames().empty() && !o->get_positional()) continue;
        opts.push_back({{"name", o->get_name()},
                        {"long", o->get_lnames()},
                        {"short", o->get_snames()},
                        {"positional", o->get_positional()},
                        {"hidden", o->get_group().empty()},
                        {"type", o->get_type_name()},
                        {"default", o->get_default_str()},
                        {"min", o->get_expected_min()},
                        {"max", o->get_expected_max()},
                        {"description", o->get_description()}});
    }
    j["options"] = opts;
    nlohmann::ordered_json subs = nlohmann::ordered_json::array();
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) subs.push_back(app_table(*sub));
    j["subcommands"] = subs;
    return j;
}

// Text for roff: backslashes, hyphens, and a leading dot or quote escaped.
static std::string roff(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
    }
    std::string lines;
    size_t at = 0;
    while (at <= out.size()) {
        const size_t nl = out.find('\n', at);
        std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        if (!line.empty() && (line[0] == '.' || line[0] == '\'')) line = "\\&" + line;
        lines += line + "\n";
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return lines;
}

static void man_options(std::string& out, const CLI::App& app) {
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty() || o->get_name() == "--help") continue;
        std::string names;
        for (const std::string& l : o->get_lnames()) names += (names.empty() ? "--" : ", --") + l;
        for (const std::string& n : o->get_snames()) names += (names.empty() ? "-" : ", -") + n;
        if (names.empty()) names = o->get_name();
        if (o->get_expected_max() > 0) names += " " + o->get_type_name();
        out += ".TP\n.B " + roff(names) + roff(o->get_description());
    }
}

std::string man_page(const CLI::App& app) {
    std::string out = ".TH ATTN 1 \"\" \"attn " ATTN_VERSION "\" \"User Commands\"\n.SH NAME\nattn \\- " +
                      roff("see Transformer attention work, formula by formula, with live numbers") +
                      ".SH SYNOPSIS\n.B attn\nCOMMAND [OPTIONS]\n.SH DESCRIPTION\n" + roff(app.get_description()) +
                      ".PP\nConventions shared by every command (docs/cli.md): \\-\\-seq/\\-T, \\-\\-batch/\\-B, "
                      "\\-\\-heads/\\-H, \\-\\-seed (default 0), \\-\\-threads (0: every core), \\-\\-json [FILE].\n"
                      ".SH COMMANDS\n";
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        out += ".SS " + roff(sub->get_name()) + roff(sub->get_description());
        man_options(out, *sub);
        for (const CLI::App* s2 : sub->get_subcommands([](const CLI::App*) { return true; })) {
            out += ".SS " + roff(sub->get_name() + " " + s2->get_name()) + roff(s2->get_description());
            man_options(out, *s2);
        }
    }
    out += ".SH EXIT STATUS\n0 success; 2 bad input (one line on standard error naming the option and the rule); "
           "1 an internal error.\n.SH ENVIRONMENT\n.TP\n.B NO_COLOR\nno colour.\n.TP\n.B ATTN_ISA\n" +
           roff("force a kernel path: generic, neon, avx2, avx512 or amx.") + ".TP\n.B ATTN_DATA_DIR\n" +
           roff("a folder searched first for the data files (macbeth.txt; models/...); then ./data, "
                "<prefix>/share/attn/data and data/ above the executable.") +
           ".TP\n.B ATTN_MODEL_DIR\n" + roff("the pretrained model's folder (config.json, vocab.txt, model.safetensors).");
    return out;
}

static std::string option_words(const CLI::App& app) {
    std::string w;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;
        for (const std::string& l : o->get_lnames()) w += " --" + l;
        for (const std::string& n : o->get_snames()) w += " -" + n;
    }
    return w;
}

// The case arms that set the words offered as the value of the option before the cursor
// ("$prev"): the option's fixed words (mask kinds, backends, tasks, languages).
static std::string value_arms(const CLI::App& app, const std::string& indent) {
    std::string arms;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty() || o->get_expected_max() == 0) continue;
        const std::vector<std::string> values = offered_values(*o);
        if (values.empty()) continue;
        std::string names;
        for (const std::string& l : o->get_lnames()) names += (names.empty() ? "--" : "|--") + l;
        for (const std::string& n : o->get_snames()) names += (names.empty() ? "-" : "|-") + n;
        arms += fmt::format("{}{}) vals=\"{}\" ;;\n", indent, names, fmt::join(values, " "));
    }
    return arms.empty() ? std::string() : indent + "case \"$prev\" in\n" + arms + indent + "esac\n";
}

std::string bash_completion(const CLI::App& app) {
    std::string cmds, cases;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        cmds += (cmds.empty() ? "" : " ") + sub->get_name();
        std::string subs, subcases;
        for (const CLI::App* s2 : sub->get_subcommands([](const CLI::App*) { return true; })) {
            subs += " " + s2->get_name();
            subcases += fmt::format("                {}) opts=\"{}\"\n{}                    ;;\n", s2->get_name(),
                                    option_words(*s2), value_arms(*s2, "                    "));
        }
        if (subs.empty())
            cases += fmt::format("        {}) opts=\"{}\"\n{}            ;;\n", sub->get_name(), option_words(*sub),
                                 value_arms(*sub, "            "));
        else
            cases += fmt::format("        {})\n            case \"${{COMP_WORDS[2]}}\" in\n{}"
                                 "                *) opts=\"{}{}\" ;;\n            esac ;;\n",
                                 sub->get_name(), subcases, subs, option_words(*sub));
    }
    return fmt::format("# bash completion for attn (generated by `attn --completion-bash`): commands, their options,\n"
                       "# and the words an option's value may be (mask kinds, backends, tasks, languages)\n"
                       "_attn() {{\n"
                       "    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
                       "    local opts=\"\" vals=\"\"\n"
                       "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                       "        COMPREPLY=($(compgen -W \"{} --help --version\" -- \"$cur\"))\n"
                       "        return\n"
                       "    fi\n"
                       "    case \"${{COMP_WORDS[1]}}\" in\n{}    esac\n"
                       "    if [ -n \"$vals\" ]; then\n"
                       "        COMPREPLY=($(compgen -W \"$vals\" -- \"$cur\"))\n"
                       "        return\n"
                       "    fi\n"
                       "    COMPREPLY=($(compgen -W \"$opts --help\" -- \"$cur\"))\n"
                       "}}\n"
                       "complete -o default -F _attn attn\n",
                       cmds, cases);
}

// ---- zsh: _arguments specs with each option's description, files offered where a value is a file

// Text safe inside a single-quoted _arguments spec's [description]: brackets and colons escaped,
// the first sentence only (a spec is one line of a menu).
static std::string zsh_description(std::string d) {
    if (const size_t cut = d.find(". "); cut != std::string::npos) d.resize(cut);
    if (const size_t cut = d.find(" ("); cut != std::string::npos && cut > 20) d.resize(cut);
    std::string out;
    for (const char c : d) {
        if (c == '\'') out += "'\\''";
        else if (c == '[' || c == ']' || c == ':' || c == '\\') out += std::string("\\") + c;
        else if (c == '\n') out += ' ';
        else out += c;
    }
    return out;
}

// The options whose value names a file: the shell offers paths there.
static bool takes_file(const std::string& long_name) {
    static const std::set<std::string> f = {"json", "svg", "html", "dump", "save", "load", "output", "file",
                                            "corpus", "mask-file", "weights-file", "model-dir", "text-file"};
    return f.count(long_name) > 0;
}

static std::string zsh_specs(const CLI::App& app, const std::string& indent) {
    std::string out;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;  // hidden: deprecated spellings are not offered
        const std::string desc = zsh_description(o->get_description());
        std::vector<std::string> names;
        for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
        for (const std::string& n : o->get_snames()) names.push_back("-" + n);
        if (names.empty()) continue;  // a positional: the file fallback below
        const bool file = !o->get_lnames().empty() && takes_file(o->get_lnames().front());
        std::string value;
        if (o->get_expected_max() > 0) {
            std::string type = o->get_type_name();
            for (char& c : type)
                if (c == ':' || c == '\'') c = ' ';
            // "::" for a value that may be left out (--json [FILE])
            const std::string colon = o->get_expected_min() == 0 ? "::" : ":";
            const std::vector<std::string> values = offered_values(*o);
            value = colon + (type.empty() ? std::string("VALUE") : type) +
                    (file ? std::string(":_files")
                          : values.empty() ? std::string(": ") : fmt::format(":({})", fmt::join(values, " ")));
        }
        for (const std::string& n : names) out += indent + "'" + n + "[" + desc + "]" + value + "' \\\n";
    }
    return out;
}

std::string zsh_completion(const CLI::App& app) {
    std::string cmds, cases;
    auto described = [](const CLI::App* a) {
        return "    '" + a->get_name() + ":" + zsh_description(a->get_description()) + "'\n";
    };
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        cmds += described(sub);
        const auto subs = sub->get_subcommands([](const CLI::App*) { return true; });
        if (subs.empty()) {
            cases += "    " + sub->get_name() + ")\n      _arguments -s \\\n" + zsh_specs(*sub, "        ") +
                     "        '*:file:_files' ;;\n";
            continue;
        }
        std::string subcmds, subcases;
        for (const CLI::App* s2 : subs) {
            subcmds += "  " + described(s2);
            subcases += "        " + s2->get_name() + ")\n          _arguments -s \\\n" +
                        zsh_specs(*s2, "            ") + "            '*:file:_files' ;;\n";
        }
        cases += fmt::format("    {})\n      if (( CURRENT == 3 )); then\n        local -a subs\n        subs=(\n{}"
                             "        )\n        _describe -t commands 'attn {} command' subs\n        return\n"
                             "      fi\n      case ${{words[3]}} in\n{}      esac ;;\n",
                             sub->get_name(), subcmds, sub->get_name(), subcases);
    }
    return fmt::format("#compdef attn\n"
                       "# zsh completion for attn (generated by `attn --completion-zsh`): each option with its\n"
                       "# description, paths where a value is a file. Installed as _attn in a folder of $fpath.\n"
                       "_attn() {{\n"
                       "  local -a commands\n"
                       "  commands=(\n{}  )\n"
                       "  if (( CURRENT == 2 )); then\n"
                       "    _describe -t commands 'attn command' commands\n"
                       "    return\n"
                       "  fi\n"
                       "  case ${{words[2]}} in\n{}  esac\n"
                       "}}\n"
                       "_attn \"$@\"\n",
                       cmds, cases);
}

std::string cli_table_json(const CLI::App& app) {
    nlohmann::ordered_json j = app_table(app);
    j = nlohmann::ordered_json{{"format", "attn-cli"}, {"version", 1}, {"app", j}};
    return j.dump(1);
}

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
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
        if (std::find(names.begin(), names.end(), given) == names.end()) {
            for (const std::string& n : names)
                if (edit_distance(given, n) <= std::max<size_t>(1, n.size() / 3) || n.rfind(given, 0) == 0) near.push_back(n);
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
