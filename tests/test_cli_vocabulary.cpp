// One vocabulary: every subcommand's options, as the program's own option table
// (`attn --cli-json`) lists them, checked against the tables of docs/cli.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_util.hpp"

namespace {

struct VocabRow {
    std::string long_name, short_name, default_value;
};

std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string c;
    std::getline(ss, c, '|');  // before the first bar
    while (std::getline(ss, c, '|')) {
        const auto a = c.find_first_not_of(" `"), b = c.find_last_not_of(" `");
        out.push_back(a == std::string::npos ? "" : c.substr(a, b - a + 1));
    }
    return out;
}

// The rows of the table under `heading` in docs/cli.md whose first cell is an option.
std::vector<std::vector<std::string>> table(const std::string& heading) {
    std::ifstream in(attn::test::source_path("docs/cli.md"));
    REQUIRE(in.good());
    std::string line;
    bool inside = false;
    std::vector<std::vector<std::string>> rows;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) inside = line == "## " + heading;
        if (inside && line.rfind("| `-", 0) == 0) rows.push_back(cells(line));
    }
    return rows;
}

struct Opt {
    std::string command;
    nlohmann::json j;
};

void walk(const nlohmann::json& app, const std::string& path, std::vector<Opt>& out) {
    for (const auto& o : app["options"]) out.push_back({path, o});
    for (const auto& s : app["subcommands"]) walk(s, path.empty() ? s["name"].get<std::string>() : path + " " + s["name"].get<std::string>(), out);
}

std::vector<Opt> all_options() {
    const attn::test::CliResult r = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' --cli-json");
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["format"] == "attn-cli");
    std::vector<Opt> out;
    walk(j["app"], "", out);
    return out;
}

bool has(const nlohmann::json& list, const std::string& name) {
    for (const auto& n : list)
        if (n == name) return true;
    return false;
}

}  // namespace

TEST_CASE("cli vocabulary: every subcommand's options follow docs/cli.md") {
    const auto vocab = table("The vocabulary");
    REQUIRE(vocab.size() >= 14);
    const auto deprecated = table("Deprecated spellings");
    REQUIRE(deprecated.size() >= 5);
    std::set<std::string> old_names;
    for (const auto& d : deprecated) old_names.insert(d[0]);
    const std::vector<Opt> opts = all_options();
    std::set<std::string> commands;
    for (const Opt& o : opts) commands.insert(o.command);
    REQUIRE(commands.size() >= 15);  // forward, view, ..., model attention, model embed

    for (const Opt& o : opts) {
        const auto& j = o.j;
        INFO(o.command << " " << j["name"].get<std::string>());
        if (j["hidden"].get<bool>()) {
            // a hidden option is a deprecated spelling, listed in the table, that says so
            CHECK(j["description"].get<std::string>().rfind("deprecated spelling of ", 0) == 0);
            bool listed = false;
            for (const auto& n : j["long"]) listed = listed || old_names.count("--" + n.get<std::string>()) > 0;
            for (const auto& n : j["short"]) listed = listed || old_names.count("-" + n.get<std::string>()) > 0;
            CHECK(listed);
            continue;
        }
        // no visible option uses an old spelling
        for (const auto& n : j["long"]) CHECK(old_names.count("--" + n.get<std::string>()) == 0);
        for (const auto& row : vocab) {
            const std::string lname = row[0].substr(2);  // "--seq" -> "seq"
            const std::string sname = row[1].empty() ? "" : row[1].substr(1);
            // a short letter of the table belongs to its option alone
            if (!sname.empty() && has(j["short"], sname)) CHECK(has(j["long"], lname));
            if (!has(j["long"], lname)) continue;
            if (lname == "seq" || lname == "heads") CHECK(has(j["short"], sname));
            if (!row[3].empty()) CHECK(j["default"] == row[3]);  // --seed 0, --threads 0
            if (lname == "json") CHECK((j["min"] == 0 && j["max"] == 1));
            if (lname == "svg" || lname == "output") CHECK(j["min"] == 1);
            if (lname == "quiet" || lname == "no-color") CHECK(j["max"] == 0);
        }
    }
}

TEST_CASE("cli vocabulary: a deprecated spelling still works and prints one note") {
    const auto r = attn::test::run_shell("'" + std::string(ATTN_BINARY) +
                                         "' variance --dk 4 --samples 200 2>&1 >/dev/null");
    CHECK(r.code == 0);
    CHECK(r.out == "attn: note: --dk is deprecated; use --d-k\n");
    const auto f = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' forward -t 3 -b 1 2>&1");
    CHECK(f.code == 0);
    CHECK(f.out.find("B=1 T=3") != std::string::npos);
    CHECK(f.out.find("-t is deprecated; use --seq") != std::string::npos);
}

TEST_CASE("cli manners: --version, bare attn, did you mean, ambiguous lesson names") {
    const std::string bin = "'" + std::string(ATTN_BINARY) + "'";
    const auto v = attn::test::run_shell(bin + " --version");
    CHECK(v.code == 0);
    CHECK(v.out.rfind("attn ", 0) == 0);
    CHECK(v.out.find("\ncommit ") != std::string::npos);
    CHECK(v.out.find("\ncompiler ") != std::string::npos);
    CHECK(v.out.find("\nCUDA ") != std::string::npos);
    // the kernels this CPU runs: the ISA, the flash kernel, the bf16 path and the GEMMs
    for (const char* part : {"\nkernels ", ": flash ", ", flash-bf16 ", ", encoder GEMM ", ", training GEMM "})
        CHECK(v.out.find(part) != std::string::npos);
    // not a terminal: the usage on stderr, exit 2 (as git)
    const auto bare = attn::test::run_shell(bin + " 2>&1");  // stdout is a pipe here
    CHECK(bare.code == 2);
    CHECK(bare.out.find("Subcommands:") != std::string::npos);
    const auto typo = attn::test::run_shell(bin + " froward 2>&1");
    CHECK(typo.code == 2);
    CHECK(typo.out == "attn: error: unknown command 'froward'; did you mean 'forward'?\n");
    const auto opt_typo = attn::test::run_shell(bin + " forward --sqe 3 2>&1");
    CHECK(opt_typo.code == 2);
    CHECK(opt_typo.out.find("did you mean '--seq' for '--sqe'?") != std::string::npos);
    CHECK(std::count(opt_typo.out.begin(), opt_typo.out.end(), '\n') == 1);
    const auto far = attn::test::run_shell(bin + " forward --zzzzzzzz 2>&1");  // nothing near: no guess
    CHECK(far.code == 2);
    CHECK(far.out.find("did you mean") == std::string::npos);
    const auto amb = attn::test::run_shell(bin + " lesson m 2>&1");
    CHECK(amb.code == 2);
    CHECK(amb.out.find("masks") != std::string::npos);
    CHECK(amb.out.find("multi-head") != std::string::npos);
    CHECK(std::count(amb.out.begin(), amb.out.end(), '\n') == 1);
}

TEST_CASE("cli manners: the man page and the bash and zsh completions come from the option table") {
    const std::string bin = "'" + std::string(ATTN_BINARY) + "'";
    const auto man = attn::test::run_shell(bin + " --man");
    REQUIRE(man.code == 0);
    CHECK(man.out.rfind(".TH ATTN 1", 0) == 0);
    const auto comp = attn::test::run_shell(bin + " --completion-bash");
    REQUIRE(comp.code == 0);
    for (const char* cmd : {"tour", "lesson", "forward", "view", "decode", "variance", "variants", "bench", "train",
                            "experiment", "model"}) {
        INFO(cmd);
        CHECK(man.out.find(std::string(".SS ") + cmd + "\n") != std::string::npos);
        CHECK(comp.out.find(std::string("        ") + cmd + ")") != std::string::npos);
    }
    CHECK(man.out.find("\\-\\-d\\-k") != std::string::npos);
    CHECK(comp.out.find(" --d-k") != std::string::npos);
    CHECK(comp.out.find(" --dk") == std::string::npos);  // hidden spellings are not offered
    CHECK(attn::test::run_shell(bin + " --completion-bash | bash -n").code == 0);
    // zsh: every command, each option with its description, files where a value is a file
    const auto zsh = attn::test::run_shell(bin + " --completion-zsh");
    REQUIRE(zsh.code == 0);
    CHECK(zsh.out.rfind("#compdef attn\n", 0) == 0);
    for (const char* cmd : {"tour", "lesson", "lessons", "claims", "forward", "view", "decode", "variance", "variants",
                            "bench", "train", "experiment", "model"}) {
        INFO(cmd);
        CHECK(zsh.out.find(std::string("    '") + cmd + ":") != std::string::npos);  // offered, with its description
        CHECK(zsh.out.find(std::string("    ") + cmd + ")\n") != std::string::npos);  // its options
    }
    CHECK(zsh.out.find("        attention)\n") != std::string::npos);  // model's own commands
    CHECK(zsh.out.find("'--d-k[") != std::string::npos);
    CHECK(zsh.out.find("'--dk[") == std::string::npos);
    CHECK(zsh.out.find("'--svg[") != std::string::npos);
    CHECK(zsh.out.find(":_files' \\\n") != std::string::npos);
    if (attn::test::run_shell("command -v zsh >/dev/null").code == 0)
        CHECK(attn::test::run_shell(bin + " --completion-zsh | zsh -n").code == 0);
    else
        MESSAGE("zsh is not installed: the completion's syntax is not checked here");
    if (attn::test::run_shell("command -v man >/dev/null").code != 0) {
        MESSAGE("man is not installed: the page is not rendered here");
        return;
    }
    const auto shown = attn::test::run_shell(bin + " --man > /tmp/attn_test_man.1 && MANWIDTH=80 man -l /tmp/attn_test_man.1 2>&1");
    CHECK(shown.code == 0);
    CHECK(shown.out.find("forward") != std::string::npos);
}

TEST_CASE("cli vocabulary: -o/--output names the main file of the commands docs/cli.md lists, and writes it") {
    // the table of docs/cli.md: command -> the option -o stands for
    const std::map<std::string, std::string> main_file = {{"forward", "dump"},
                                                          {"model attention", "dump"},
                                                          {"model cache", "dump"},
                                                          {"model embed", "npy"},
                                                          {"train", "save"},
                                                          {"experiment", "store"},
                                                          {"exercise", "output"}};
    std::map<std::string, std::string> found;
    for (const Opt& o : all_options())
        if (has(o.j["long"], "output")) {
            CHECK(has(o.j["short"], "o"));
            found[o.command] = o.j["long"][0].get<std::string>();
        }
    CHECK(found == main_file);
    // -o writes what --dump writes
    const std::string dir = attn::test::temp_dir("output");
    const auto a = attn::test::run_attn("forward --seq 4 --d-model 8 --heads 2 -o " + dir + "/a.json");
    const auto b = attn::test::run_attn("forward --seq 4 --d-model 8 --heads 2 --dump " + dir + "/b.json");
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    std::ifstream fa(dir + "/a.json"), fb(dir + "/b.json");
    std::stringstream sa, sb;
    sa << fa.rdbuf();
    sb << fb.rdbuf();
    CHECK(!sa.str().empty());
    CHECK(sa.str() == sb.str());
}
