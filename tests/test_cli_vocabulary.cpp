// One vocabulary: every subcommand's options, as the program's own option table
// (`attn --cli-json`) lists them, checked against the tables of docs/cli.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "attn/io/dump.hpp"
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
    for (const auto& s : app["subcommands"])
        walk(s, path.empty() ? s["name"].get<std::string>() : path + " " + s["name"].get<std::string>(), out);
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
    CHECK(opt_typo.out == "attn: error: --sqe: not an option of attn forward; did you mean --seq?\n");
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
    const auto shown =
        attn::test::run_shell(bin + " --man > /tmp/attn_test_man.1 && MANWIDTH=80 man -l /tmp/attn_test_man.1 2>&1");
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

// The commands table of docs/cli.md against the program's own list of commands, both ways: every
// command (a leaf: `model attention`, not `model`) has a row, every row is a command, and each row's
// marks say which of --json, --seed and --threads the command takes, exactly.
TEST_CASE("cli vocabulary: docs/cli.md's commands table is the CLI's list of commands, with their options") {
    std::ifstream in(attn::test::source_path("docs/cli.md"));
    REQUIRE(in.good());
    std::string line;
    bool inside = false;
    std::map<std::string, std::vector<std::string>> rows;  // command -> its cells after the name
    std::vector<std::string> header;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) inside = line == "## Commands";
        if (!inside || line.rfind("|", 0) != 0) continue;
        const std::vector<std::string> c = cells(line);
        if (c.empty() || c[0].rfind("---", 0) == 0) continue;
        if (header.empty()) {
            header = c;
            continue;
        }
        CHECK_MESSAGE(rows.count(c[0]) == 0, "listed twice: " << c[0]);
        rows[c[0]] = std::vector<std::string>(c.begin() + 1, c.end());
    }
    REQUIRE(header.size() == 5);  // command, --json, --seed, --threads, what it does
    CHECK(header[1] == "--json");
    CHECK(header[2] == "--seed");
    CHECK(header[3] == "--threads");

    std::map<std::string, std::set<std::string>> options;  // leaf command -> its visible long options
    std::set<std::string> parents;
    for (const Opt& o : all_options()) {
        if (o.command.empty()) continue;
        if (const size_t sp = o.command.find(' '); sp != std::string::npos) parents.insert(o.command.substr(0, sp));
        if (!o.j["hidden"].get<bool>())
            for (const auto& n : o.j["long"]) options[o.command].insert("--" + n.get<std::string>());
        options[o.command];  // a command with no option still counts
    }
    for (const std::string& p : parents) options.erase(p);  // `model` is a group; its commands are the rows
    REQUIRE(options.size() >= 20);
    for (const auto& [command, opts] : options) {
        INFO(command);
        REQUIRE_MESSAGE(rows.count(command) == 1, "attn " << command << " has no row in docs/cli.md's Commands table");
        const auto& r = rows[command];
        REQUIRE(r.size() == 4);
        for (size_t k = 0; k < 3; ++k) {
            INFO(header[k + 1]);
            CHECK((r[k] == "yes" || r[k] == "—"));
            CHECK((r[k] == "yes") == (opts.count(header[k + 1]) == 1));
        }
        CHECK(!r[3].empty());
    }
    for (const auto& [command, r] : rows) CHECK_MESSAGE(options.count(command) == 1, "no command attn " << command);
}

// The vocabulary's promises checked on the running program: an unknown option or command is one line
// in the documented format with the nearest names, or the name the concept has in that command.
TEST_CASE("cli manners: unknown options and commands get one line, the nearest names and the other name") {
    auto one_line = [](const attn::test::CliResult& r) {
        return r.code == 2 && r.out.rfind("attn: error: ", 0) == 0 && std::count(r.out.begin(), r.out.end(), '\n') == 1;
    };
    const std::string bin = "'" + std::string(ATTN_BINARY) + "'";
    const auto sed = attn::test::run_shell(bin + " forward --sed 1 2>&1");
    CHECK(one_line(sed));
    CHECK(sed.out == "attn: error: --sed: not an option of attn forward; did you mean --seed or --seq?\n");
    const auto haeds = attn::test::run_shell(bin + " forward --haeds 2 2>&1");
    CHECK(one_line(haeds));
    CHECK(haeds.out.find("--haeds: not an option of attn forward; did you mean --heads?") != std::string::npos);
    const auto nxt = attn::test::run_shell(bin + " model nxt 2>&1");
    CHECK(one_line(nxt));
    CHECK(nxt.out.find("unknown command 'model nxt'; did you mean 'model next'?") != std::string::npos);
    CHECK(nxt.out.find("attention, entropy") != std::string::npos);  // the list
    const auto bare = attn::test::run_shell(bin + " model 2>&1");
    CHECK(one_line(bare));
    CHECK(bare.out.find("name one of its commands first: attention") != std::string::npos);
    const auto steps = attn::test::run_shell(bin + " decode --seq 4 2>&1");
    CHECK(one_line(steps));
    CHECK(steps.out.find("--seq: not an option of attn decode; decode's T is --steps") != std::string::npos);
    const auto nested = attn::test::run_shell(bin + " model attention --layr 1 --text a 2>&1");
    CHECK(one_line(nested));
    CHECK(nested.out.find("--layr: not an option of attn model attention; did you mean --layer?") != std::string::npos);
    // a value that starts with '-' is the option's value, not an unknown option
    CHECK(attn::test::run_shell(bin + " forward --fill -1e9 --seq 3 >/dev/null 2>&1").code == 0);
    // CLI11's own messages, in the format: OPTION: rule
    const auto excl = attn::test::run_shell(bin + " experiment --list --quick 2>&1");
    CHECK(one_line(excl));
    CHECK(excl.out.find("attn: error: --list: cannot be given with --quick") != std::string::npos);
    // --threads on every command that computes: forward takes it and gives the same numbers
    const auto t1 = attn::test::run_shell(bin + " forward --threads 1 --seq 5 --json 2>/dev/null");
    const auto t2 = attn::test::run_shell(bin + " forward --threads 2 --seq 5 --json 2>/dev/null");
    REQUIRE(t1.code == 0);
    CHECK(t1.out == t2.out);
}

// One placeholder style: every value is an upper-case word ([WORD] when it may be left out), or a
// fixed set a|b|c; CLI11's TEXT, INT and FLOAT never show, and --help prints the same words.
TEST_CASE("cli vocabulary: one placeholder style in every help") {
    const std::regex style(R"(\[?([A-Z][A-Z0-9_,.:]*|[a-z0-9.-]+(\|[a-z0-9.:-]+)+)\]?)");
    for (const Opt& o : all_options()) {
        if (o.j["hidden"].get<bool>() || o.j["max"] == 0 || o.j["positional"].get<bool>()) continue;
        const std::string type = o.j["type"].get<std::string>();
        INFO(o.command << " " << o.j["name"].get<std::string>() << ": " << type);
        CHECK(std::regex_match(type, style));
        for (const char* raw : {"INT", "UINT", "FLOAT", "ENUM"}) CHECK(type != raw);
        if (type == "TEXT") CHECK(o.j["long"][0] == "text");  // --text TEXT, no other option's raw TEXT
        if (o.j["min"] == 0) CHECK(type.front() == '[');
    }
    const auto help = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' tour --help");
    CHECK(help.out.find("--lang en|zh") != std::string::npos);
    CHECK(help.out.find("TEXT") == std::string::npos);
}

// Completion offers an option's fixed words as its value, in bash and zsh.
TEST_CASE("cli manners: bash and zsh complete option values (mask kinds, backends, tasks, languages)") {
    const std::string bin = "'" + std::string(ATTN_BINARY) + "'";
    const auto bash = attn::test::run_shell(bin + " --completion-bash");
    REQUIRE(bash.code == 0);
    for (const char* want : {"--mask) vals=\"none causal pad:", "--task) vals=\"copy reverse sort",
                             "--lang) vals=\"en zh\"", "--impl) vals=\"reference"})
        CHECK_MESSAGE(bash.out.find(want) != std::string::npos, want);
    // the script itself: complete `attn forward --mask ca` in a bash that sourced it
    const auto done = attn::test::run_shell(
        "bash -c 'source <(" + bin + " --completion-bash); COMP_WORDS=(attn forward --mask ca); COMP_CWORD=3; _attn; "
        "echo \"${COMPREPLY[*]}\"'");
    CHECK(done.out == "causal causal+pad:\n");
    const auto zsh = attn::test::run_shell(bin + " --completion-zsh");
    CHECK(zsh.out.find(":(en zh)' \\") != std::string::npos);
    CHECK(zsh.out.find("'--task[") != std::string::npos);
}

// --json on every command that produces a result: forward and model attention print their result
// object (strict JSON; --dump - stays the full tensor dump), experiment --list a JSON list.
TEST_CASE("cli vocabulary: forward, model attention and experiment --list print strict JSON with --json") {
    const std::string bin = "'" + std::string(ATTN_BINARY) + "'";
    const auto f = attn::test::run_shell(bin + " forward --seq 4 --heads 2 --backward --json");
    REQUIRE(f.code == 0);
    const nlohmann::json j = nlohmann::json::parse(f.out);  // stdout is the JSON alone
    CHECK(j["format"] == "attn-forward");
    CHECK(j["out"]["shape"] == std::vector<int>{2, 4, 16});
    CHECK(j["out"]["first_row"].size() == 16);
    CHECK(j["row_sum_error"].get<double>() < 1e-5);
    CHECK(j["gradients"].size() >= 5);
    CHECK(j["config"]["heads"] == 2);
    // the same numbers as the dump
    const auto d = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' forward --seq 4 --heads 2 --dump -");
    const attn::Dump dump = attn::dump_from_string(d.out, "stdout");
    CHECK(dump.tensors.at("out").data[0] == doctest::Approx(j["out"]["first_row"][0].get<double>()));
    const auto both = attn::test::run_attn("forward --json --dump -");
    CHECK(both.code == 2);
    CHECK(both.out.find("both would write to standard output") != std::string::npos);

    const std::string tiny = attn::test::source_path("tests/fixtures/bert-tiny");
    const auto a = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' model attention --model '" + tiny +
                                         "' --text 'The cat sat' --layer 1 --head 2 --json");
    REQUIRE(a.code == 0);
    const nlohmann::json aj = nlohmann::json::parse(a.out);
    CHECK(aj["format"] == "attn-model-attention");
    CHECK(aj["tokens"].size() == 5);
    CHECK(aj["sinks"].size() == 2);
    REQUIRE(aj["weights"].size() == 1);
    CHECK(aj["weights"][0]["head"] == 2);
    CHECK(aj["weights"][0]["weights"].size() == 5);
    const std::string g2 = attn::test::source_path("tests/fixtures/gpt2-tiny");
    const auto ga = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' model attention --model '" + g2 +
                                          "' --text 'the cat' --json");
    REQUIRE(ga.code == 0);
    CHECK(nlohmann::json::parse(ga.out)["architecture"] == "gpt2");

    const auto e = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' experiment --list --json");
    REQUIRE(e.code == 0);
    const nlohmann::json ej = nlohmann::json::parse(e.out);
    CHECK(ej["format"] == "attn-experiment-list");
    CHECK(ej["experiments"].size() >= 5);
    CHECK(!ej["experiments"][0]["claims"].empty());
}

TEST_CASE("cli manners: the shipped induction model refuses lengths it was never trained on, in one line") {
    const auto bad = attn::test::run_attn("model induction --length 8");
    CHECK(bad.code == 2);
    CHECK(std::count(bad.out.begin(), bad.out.end(), '\n') == 1);
    CHECK(bad.out.find("--length: this model was trained on 32 tokens") != std::string::npos);
    CHECK(bad.out.find("give --length 13 to 16") != std::string::npos);
    const auto ok = attn::test::run_attn("model induction --length 14 --json");
    REQUIRE(ok.code == 0);
}

TEST_CASE("cli manners: tour --html with --core writes the first sitting as a page") {
    const std::string dir = attn::test::temp_dir("tour-core");
    const auto r = attn::test::run_attn("tour --core --from 1 --to 3 --html " + dir + "/core.html");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    std::ifstream in(dir + "/core.html");
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str().find("id=\"lesson-1\"") != std::string::npos);
    CHECK(r.out.find("wrote ") != std::string::npos);
    std::filesystem::remove_all(dir);
}
