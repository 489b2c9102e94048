// app/cli_errors.cpp: the command line's own errors, one line each (see cli_errors.hpp).
#include "cli_errors.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn::cli {

namespace {

// Where a command calls a concept by another name than the vocabulary's: the word a user
// brings from elsewhere, and what this command calls it.
struct OtherName {
    const char* command;  // as command_name() gives it
    const char* word;     // the option typed
    const char* hint;
};
constexpr OtherName kOtherNames[] = {
    {"decode", "--seq", "decode's T is --steps, the tokens it decodes one by one"},
    {"decode", "-T", "decode's T is --steps, the tokens it decodes one by one"},
    {"decode", "--tokens", "decode's T is --steps, the tokens it decodes one by one"},
    {"model induction", "--seq", "the random block's length is --length here (the sequence is the block twice)"},
    {"model induction", "-T", "the random block's length is --length here (the sequence is the block twice)"},
    {"model generate", "--tokens", "the number of tokens to add is --steps"},
    {"model generate", "--length", "the number of tokens to add is --steps"},
    {"model embed", "--seq", "a sentence's longest length in tokens is --max-tokens here"},
    {"model embed", "--max-seq-length", "a sentence's longest length in tokens is --max-tokens here"},
    {"model next", "--steps", "model next predicts one token; model generate adds --steps of them"},
    {"variance", "--seq", "variance's T is --keys, the scores of one softmax row"},
    {"variance", "-T", "variance's T is --keys, the scores of one softmax row"},
    {"forward", "--steps", "forward runs one pass; attn decode runs --steps of them with a KV cache"},
    {"forward", "--out", "forward's tensors go to --dump FILE (or -o FILE); its result object to --json"},
};

std::vector<const CLI::App*> subcommands_of(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App*) { return true; });
}

bool is_number(const std::string& w) {
    char* end = nullptr;
    std::strtod(w.c_str(), &end);
    return end != w.c_str() && *end == '\0';
}

// `word` with letters left out: "--sed" of "--seed" (the commonest slip).
bool is_subsequence(const std::string& word, const std::string& of) {
    size_t k = 0;
    for (char c : of)
        if (k < word.size() && word[k] == c) ++k;
    return k == word.size();
}

size_t common_prefix(const std::string& a, const std::string& b) {
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    return k;
}

// The visible option names of `cmd` that start like `word` (long ones for "--x", short for "-x").
std::vector<std::string> names_like(const CLI::App& cmd, const std::string& word) {
    std::vector<std::string> out;
    const bool lng = word.rfind("--", 0) == 0;
    for (const CLI::Option* o : cmd.get_options()) {
        if (o->get_group().empty()) continue;  // hidden: deprecated spellings are not offered
        if (lng)
            for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
        else
            for (const std::string& n : o->get_snames()) out.push_back("-" + n);
    }
    return out;
}

// "; did you mean --seed?" (two names when two are as near): the nearest by edit distance, those
// the word is a subsequence of first, then the longer common prefix; "" when none is near.
std::string nearest(const std::vector<std::string>& names, const std::string& word) {
    const size_t body = word.size() - std::min<size_t>(word.size(), word.rfind("--", 0) == 0 ? 2 : 1);
    const size_t limit = std::max<size_t>(1, body / 3);
    struct Cand {
        size_t d;
        bool sub;
        size_t prefix;
        std::string name;
    };
    std::vector<Cand> near;
    for (const std::string& n : names)
        if (const size_t d = edit_distance(word, n); d <= limit && n != word)
            near.push_back({d, is_subsequence(word, n), common_prefix(word, n), n});
    if (near.empty()) return {};
    std::stable_sort(near.begin(), near.end(), [](const Cand& a, const Cand& b) {
        if (a.d != b.d) return a.d < b.d;
        if (a.sub != b.sub) return a.sub;
        return a.prefix > b.prefix;
    });
    if (near.size() > 1 && near[1].d == near[0].d)
        return fmt::format("; did you mean {} or {}?", near[0].name, near[1].name);
    return fmt::format("; did you mean {}?", near[0].name);
}

// "attn model attention", "attn forward", or "attn" itself.
std::string full_name(const CLI::App& cmd) {
    const std::string name = command_name(cmd);
    return name.empty() ? std::string("attn") : "attn " + name;
}

std::string other_name_hint(const CLI::App& cmd, const std::string& word) {
    const std::string name = command_name(cmd);
    for (const OtherName& h : kOtherNames)
        if (name == h.command && word == h.word) return std::string("; ") + h.hint;
    return {};
}

// The first word after the command's name that looks like an option the command lacks (a value
// of the option before it, such as `--fill -1e9` or `--text -x`, is skipped).
std::optional<std::string> unknown_option_word(const CLI::App& app, const CLI::App& cmd, int argc,
                                               const char* const* argv) {
    int first = 1;
    for (const CLI::App* c = &cmd; c != &app && c != nullptr; c = c->get_parent()) ++first;
    const CLI::Option* before = nullptr;  // the option of the word before, when it takes a value
    for (int i = first; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") break;
        const bool takes_value = before != nullptr && before->get_expected_max() > 0;
        before = nullptr;
        if (word.size() < 2 || word[0] != '-' || (takes_value && word.rfind("--", 0) != 0) || is_number(word)) continue;
        std::string name = word.substr(0, word.find('='));
        if (name.rfind("--", 0) != 0) name = name.substr(0, 2);  // -T3 is -T with 3
        if (name == "--help" || name == "-h" || name == "--version") continue;
        const CLI::Option* o = cmd.get_option_no_throw(name);
        if (o == nullptr) return name;
        if (word.find('=') == std::string::npos && word.size() == name.size()) before = o;
    }
    return std::nullopt;
}

// CLI11's messages, in the format "OPTION: rule".
std::string reworded(std::string what, const CLI::App& cmd) {
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::smatch m;
    if (std::regex_match(what, m, std::regex("(-[-\\w]+) is required")))
        return m[1].str() + ": is required (" + full_name(cmd) + " --help lists what it needs)";
    if (std::regex_match(what, m, std::regex("(-[-\\w]+) requires (-[-\\w]+)")))
        return m[1].str() + ": needs " + m[2].str() + " too";
    if (std::regex_match(what, m, std::regex("(-[-\\w]+) excludes (-[-\\w]+)")))
        return m[1].str() + ": cannot be given with " + m[2].str();
    if (std::regex_match(what, m, std::regex("The value (.*) is not an allowed value for (\\S+)")))
        return m[2].str() + ": '" + m[1].str() + "' is not an allowed value";
    if (std::regex_match(what, m, std::regex("Could not convert: (\\S+) = (.*)")))
        return m[1].str() + ": cannot read '" + m[2].str() + "' as its value";
    if (std::regex_match(what, m, std::regex("The following arguments? (?:was|were) not expected: (\\S+).*")))
        return "'" + m[1].str() + "': " + full_name(cmd) + " takes no such argument (" + full_name(cmd) +
               " --help lists what it takes)";
    return what;
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

const CLI::App& named_command(const CLI::App& app, int argc, const char* const* argv) {
    const CLI::App* cmd = &app;
    for (int i = 1; i < argc && i <= 2; ++i) {
        const CLI::App* next = nullptr;
        for (const CLI::App* sub : subcommands_of(*cmd))
            if (sub->get_name() == argv[i]) next = sub;
        if (next == nullptr) break;
        cmd = next;
    }
    return *cmd;
}

std::string command_name(const CLI::App& cmd) {
    std::string name;
    for (const CLI::App* c = &cmd; c != nullptr && c->get_parent() != nullptr; c = c->get_parent())
        name = c->get_name() + (name.empty() ? "" : " " + name);
    return name;
}

std::string subcommand_error(const CLI::App& app, int argc, const char* const* argv) {
    if (argc < 2) return {};
    const CLI::App& cmd = named_command(app, argc, argv);
    if (&cmd == &app || cmd.get_parent() != &app) return {};
    const auto subs = subcommands_of(cmd);
    if (subs.empty()) return {};
    std::vector<std::string> names;
    for (const CLI::App* s : subs) names.push_back(s->get_name());
    const std::string list = fmt::format("{}", fmt::join(names, ", "));
    const std::string given = argc > 2 ? argv[2] : "";
    if (given == "--help" || given == "-h") return {};
    if (given.empty() || given[0] == '-')
        return fmt::format("{}: name one of its commands first: {} (attn {} COMMAND --help for each)", cmd.get_name(),
                           list, cmd.get_name());
    std::vector<std::string> near;
    for (const std::string& n : names)
        if (edit_distance(given, n) <= std::max<size_t>(1, n.size() / 3) || n.rfind(given, 0) == 0)
            near.push_back("'" + cmd.get_name() + " " + n + "'");
    return fmt::format("unknown command '{} {}'{} ({}'s commands: {})", cmd.get_name(), given,
                       near.empty() ? "" : fmt::format("; did you mean {}?", fmt::join(near, " or ")), cmd.get_name(),
                       list);
}

std::string parse_error_line(const CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv) {
    const CLI::App& cmd = named_command(app, argc, argv);
    if (const std::optional<std::string> word = unknown_option_word(app, cmd, argc, argv)) {
        std::string hint = other_name_hint(cmd, *word);
        if (hint.empty()) hint = nearest(names_like(cmd, *word), *word);
        return fmt::format("{}: not an option of {}{}", *word, full_name(cmd), hint);
    }
    return reworded(e.what(), cmd);
}

}  // namespace attn::cli
