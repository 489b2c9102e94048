// app/vocabulary.cpp: what every command shares without writing it itself (options.hpp):
// --threads and --seed on each command that computes, one placeholder style in every help,
// and the words a shell offers as an option's value.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/thread_cap.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/gemm_choice.hpp"
#include "attn/train/tasks.hpp"
#include "command.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

std::vector<CLI::App*> leaves(CLI::App& app) {
    std::vector<CLI::App*> out;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        const auto inner = leaves(*sub);
        if (inner.empty()) out.push_back(sub);
        out.insert(out.end(), inner.begin(), inner.end());
    }
    return out;
}

std::string path_of(const CLI::App& cmd) {
    std::string name;
    for (const CLI::App* c = &cmd; c != nullptr && c->get_parent() != nullptr; c = c->get_parent())
        name = c->get_name() + (name.empty() ? "" : " " + name);
    return name;
}

// The threads of a command that binds no --threads itself (one int per command: the app is built once).
int& shared_threads(const std::string& command) {
    static std::map<std::string, int> threads;
    return threads[command];
}
uint64_t& unused_seed(const std::string& command) {
    static std::map<std::string, uint64_t> seeds;
    return seeds[command];
}

// The --threads options add_shared_vocabulary added (the commands pass no count to the library).
std::set<const CLI::Option*>& shared_thread_options() {
    static std::set<const CLI::Option*> opts;
    return opts;
}

std::map<const CLI::Option*, std::vector<std::string>>& value_table() {
    static std::map<const CLI::Option*, std::vector<std::string>> table;
    return table;
}

// Values a shell offers by the option's long name: one name means one thing in every command.
std::vector<std::string> values_by_name(const std::string& name) {
    if (name == "mask")
        return {"none",          "causal",         "pad:",          "causal+pad:", "window:", "window-causal:",
                "strided:",      "strided-causal:", "global-local:", "global-local-causal:"};
    if (name == "impl") {
        std::vector<std::string> v;
        for (const BackendInfo& b : backends()) v.emplace_back(b.name);
        return v;
    }
    if (name == "task") {
        std::vector<std::string> v;
        for (TaskKind k : all_tasks()) v.emplace_back(task_name(k));
        return v;
    }
    if (name == "lang") return {"en", "zh"};
    if (name == "scale") return {"sqrt", "none", "cosine", "cosine:"};
    if (name == "init")
        return {"torch", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "normal:", "zeros"};
    if (name == "json-nonfinite") return {"string", "literal", "null"};
    if (name == "weights") return {"fp32", "bf16"};
    if (name == "padding") return {"skip", "compute"};
    if (name == "gemm") {
        std::vector<std::string> words;
        for (const GemmChoice g : gemm_choices()) words.push_back(gemm_choice_name(g));
        return words;
    }
    return {};
}

bool is_placeholder_word(const std::string& t) {
    if (t.empty()) return false;
    std::string core = t;
    if (core.size() > 2 && core.front() == '[' && core.back() == ']') core = core.substr(1, core.size() - 2);
    if (core.find('|') != std::string::npos) return true;  // a|b|c
    if (!std::isupper(static_cast<unsigned char>(core[0]))) return false;
    return std::all_of(core.begin(), core.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
               c == ',' || c == '.' || c == ':';
    });
}

// An option bound to an enum through one_of() (options.hpp) refuses a wrong word with "must be one of
// a, b, c, got 'x'": those words, as a|b|c ("" when no validator says so).
std::string enum_words(const CLI::Option& o) {
    for (int k = 0;; ++k) {
        CLI::Validator* v = nullptr;
        try {
            v = const_cast<CLI::Option&>(o).get_validator(k);
        } catch (const CLI::OptionNotFound&) {
            return {};
        }
        std::string probe = "\x01";
        const std::string why = (*v)(probe);
        const std::string lead = "must be one of ";
        const size_t at = why.find(lead), end = why.find(", got ");
        if (at == std::string::npos || end == std::string::npos || end < at) continue;
        std::string words = why.substr(at + lead.size(), end - at - lead.size());
        std::string out;
        for (size_t i = 0; i < words.size(); ++i)
            if (words.compare(i, 2, ", ") == 0) out += '|', ++i;
            else out += words[i];
        return out;
    }
}

// The option's placeholder in the one style: CLI11's TEXT:{a,b} becomes a|b, its TEXT, INT, UINT
// and FLOAT an upper-case word for what the value is.
std::string placeholder(const CLI::Option& o) {
    std::string t = o.get_type_name();
    if (const size_t brace = t.find(":{"); brace != std::string::npos && t.back() == '}') {
        std::string set = t.substr(brace + 2, t.size() - brace - 3);
        std::replace(set.begin(), set.end(), ',', '|');
        return set;
    }
    if (const size_t colon = t.find(':'); colon != std::string::npos && t.rfind("[", 0) != 0) {
        const std::string tail = t.substr(colon + 1);  // TEXT:FILE, UINT:SEED: the validator's word says more
        if (is_placeholder_word(tail)) return tail;
        t = t.substr(0, colon);
    }
    if (is_placeholder_word(t) && t != "TEXT" && t != "INT" && t != "UINT" && t != "FLOAT" && t != "INT64" &&
        t != "NUMBER" && t != "ENUM")
        return t;
    const std::string name = o.get_lnames().empty() ? o.get_name() : o.get_lnames().front();
    if (t == "ENUM")  // bound through one_of(): its refusal lists the words
        if (const std::string words = enum_words(o); !words.empty()) return words;
    if (t == "TEXT") {  // a closed set of words the option takes, by its name
        const std::vector<std::string> v = values_by_name(name);
        std::string words;
        for (const std::string& w : v) words += (words.empty() ? "" : "|") + w;
        if (!v.empty() && words.find(':') == std::string::npos && v.size() <= 6) return words;
    }
    if (name == "d-k") return "DK";
    if (name == "d-v") return "DV";
    static const std::set<std::string> files = {"json", "svg", "html", "dump", "save", "load", "output", "file",
                                                "corpus", "mask-file", "weights-file", "text-file", "input", "npy",
                                                "store", "csv"};
    if (files.count(name) > 0) return "FILE";
    if (name == "model") return "DIR";
    if (name == "seed") return "SEED";
    if (t == "INT" || t == "UINT" || t == "INT64") return "N";
    if (t == "FLOAT" || t == "NUMBER") return "X";
    std::string upper;
    for (char c : name) upper += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return upper.empty() ? std::string("VALUE") : upper;
}

}  // namespace

bool computes_nothing(const std::string& command) {
    // lessons lists, view draws a file, serve answers pages (each with its own settings), model fetch downloads
    return command == "lessons" || command == "view" || command == "serve" || command == "model fetch";
}

void add_shared_vocabulary(CLI::App& app) {
    for (CLI::App* cmd : leaves(app)) {
        const std::string name = path_of(*cmd);
        if (computes_nothing(name)) continue;
        if (cmd->get_option_no_throw("--threads") == nullptr)
            shared_thread_options().insert(cmd->add_option("--threads", shared_threads(name),
                                                           "at most N worker threads (0: every core); the numbers "
                                                           "are the same at any count")
                                               ->capture_default_str()
                                               ->check(integer_in(0, 1024)));
        if (cmd->get_option_no_throw("--seed") == nullptr)
            cmd->add_option("--seed", unused_seed(name),
                            "seed: nothing this command does is drawn at random (given weights and text), so every "
                            "seed gives the same numbers; taken as in every command")
                ->capture_default_str()
                ->check(seed_validator());
    }
}

void apply_threads(const CLI::App& app) {
    for (const CLI::App* cmd = &app; cmd != nullptr;) {
        if (const CLI::Option* t = cmd->get_option_no_throw("--threads");
            t != nullptr && t->count() > 0 && shared_thread_options().count(t) > 0)
            set_thread_cap(t->as<int>());
        const CLI::App* next = nullptr;
        for (const CLI::App* sub : cmd->get_subcommands())
            if (sub->parsed()) next = sub;
        cmd = next;
    }
}

void normalise_placeholders(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) {
        if (o->get_expected_max() == 0 || (o->get_lnames().empty() && o->get_snames().empty())) continue;
        std::string p = placeholder(*o);
        if (o->get_expected_min() == 0 && p.front() != '[') p = "[" + p + "]";  // --json [FILE], --rope [BASE]
        for (int k = 0;; ++k) {  // the validators' words are in p now: CLI11 would append them again
            try {
                o->get_validator(k)->description("");
            } catch (const CLI::OptionNotFound&) {
                break;
            }
        }
        o->type_name(p);
        if (p.find('|') != std::string::npos && value_table().count(o) == 0) {
            std::string set = p;
            if (set.front() == '[') set = set.substr(1, set.size() - 2);
            std::vector<std::string> words;
            for (size_t at = 0;;) {
                const size_t bar = set.find('|', at);
                words.push_back(set.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
                if (bar == std::string::npos) break;
                at = bar + 1;
            }
            value_table()[o] = words;
        }
        if (value_table().count(o) == 0 && !o->get_lnames().empty())
            if (auto v = values_by_name(o->get_lnames().front()); !v.empty()) value_table()[o] = std::move(v);
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) normalise_placeholders(*sub);
}

CLI::Option* offer_values(CLI::Option* opt, std::vector<std::string> values) {
    value_table()[opt] = std::move(values);
    return opt;
}

std::vector<std::string> offered_values(const CLI::Option& opt) {
    const auto it = value_table().find(&opt);
    return it == value_table().end() ? std::vector<std::string>() : it->second;
}

}  // namespace attn::cli
