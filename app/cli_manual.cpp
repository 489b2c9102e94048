// app/cli_manual.cpp: the command line described for readers other than --help: the man page
// (hidden `attn --man`, attn.1 made at build time) and the JSON table of every command and
// option (hidden `attn --cli-json`), both built from the registered CLI11 app, so they list
// exactly what parses.
#include <string>

#include <nlohmann/json.hpp>

#include "command.hpp"

#ifndef ATTN_VERSION
#define ATTN_VERSION "0.1.0"
#endif

namespace attn::cli {

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
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        subs.push_back(app_table(*sub));
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
    out +=
        ".SH EXIT STATUS\n0 success; 2 bad input (one line on standard error naming the option and the rule); "
        "1 an internal error.\n.SH ENVIRONMENT\n.TP\n.B NO_COLOR\nno colour.\n.TP\n.B ATTN_ISA\n" +
        roff("force a kernel path: generic, neon, avx2, avx512 or amx.") + ".TP\n.B ATTN_DATA_DIR\n" +
        roff(
            "a folder searched first for the data files (macbeth.txt; models/...); then ./data, "
            "<prefix>/share/attn/data and data/ above the executable.") +
        ".TP\n.B ATTN_MODEL_DIR\n" + roff("the pretrained model's folder (config.json, vocab.txt, model.safetensors).");
    return out;
}

std::string cli_table_json(const CLI::App& app) {
    nlohmann::ordered_json j = app_table(app);
    j = nlohmann::ordered_json{{"format", "attn-cli"}, {"version", 1}, {"app", j}};
    return j.dump(1);
}

}  // namespace attn::cli
