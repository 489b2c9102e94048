// Every --json output of every command: one envelope ("format", "version"), strict
// RFC 8259 by default (non-finite numbers as strings), --json FILE written whole,
// and, where Node is installed, read by JavaScript's JSON.parse.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

struct JsonCase {
    const char* args;    // attn ARGS ... --json
    const char* format;  // the envelope's format
    bool model = false;  // needs the pretrained model
};

// Cheap runs of every command that writes JSON (each a second or less).
const JsonCase kCases[] = {
    {"lessons", "attn-lessons"},
    {"lesson 4", "attn-lesson"},  // lessons without training runs: each case runs three times
    {"tour --from 3 --to 4", "attn-tour"},
    {"decode --steps 3", "attn-decode"},
    {"variance --dk 4,16 --samples 2000", "attn-variance"},
    {"variants --no-speed --no-model --error-t 16 --favor-m 16", "attn-variants"},
    {"bench --seq 32 --impl reference --reps 1 --warmup 0", "attn-bench"},
    {"train --task copy --steps 3 --eval-every 0", "attn-train"},
    {"model entropy --text 'a cat sat'", "attn-model-entropy", true},
    {"model probe --text 'the cat sat' --from cat --to the,sat", "attn-model-probe", true},
    {"model bench --batch 1 --reps 1 --warmup 0", "attn-model-bench", true},
    {"model embed --text hi", "attn-model-embed", true},
};

bool have_node() { return test::run_shell("node -e 0 >/dev/null 2>&1").code == 0; }

void check_document(const std::string& text, const std::string& format, const std::string& what) {
    INFO(what);
    // nlohmann's parse is strict RFC 8259: a bare -Infinity or NaN throws.
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(text));
    REQUIRE(j.is_object());
    CHECK(j.value("format", "") == format);
    CHECK(j.contains("version"));
    CHECK(j["version"].is_number_integer());
}

}  // namespace

TEST_CASE("json: every command's --json is one strict document with format and version, on stdout or in FILE") {
    const bool model =
        test::run_shell("test -d '" + test::source_path("data/models/all-MiniLM-L6-v2") + "'").code == 0 ||
        std::getenv("ATTN_MODEL_DIR") != nullptr;
    const bool node = have_node();
    if (!node) MESSAGE("node is not installed: JSON.parse is not checked (nlohmann's strict parser still is)");
    const fs::path dir = fs::temp_directory_path() / ("attn_json_env_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    int ran = 0;
    for (const JsonCase& c : kCases) {
        if (c.model && !model) {
            MESSAGE("skipped without the model: attn " << c.args << " --json");
            continue;
        }
        INFO(c.args);
        // stdout: only the document (the text goes to stderr, dropped here)
        const test::CliResult out =
            test::run_shell("'" + std::string(ATTN_BINARY) + "' " + c.args + " --json 2>/dev/null");
        REQUIRE(out.code == 0);
        check_document(out.out, c.format, "--json (stdout)");
        // --json - is the same as no value
        const test::CliResult dash =
            test::run_shell("'" + std::string(ATTN_BINARY) + "' " + c.args + " --json - 2>/dev/null");
        CHECK(dash.code == 0);
        check_document(dash.out, c.format, "--json -");
        // --json FILE: the file holds the document
        const std::string file = (dir / "out.json").string();
        fs::remove(file);
        const test::CliResult f = test::run_attn(std::string(c.args) + " --json '" + file + "'");
        REQUIRE(f.code == 0);
        check_document(test::run_shell("cat '" + file + "'").out, c.format, "--json FILE");
        if (node) {
            const test::CliResult js = test::run_shell("node -e 'const d = JSON.parse(require(\"fs\").readFileSync(0, "
                                                       "\"utf8\")); if (!d.format || d.version === undefined) "
                                                       "process.exit(3)' < '" + file + "' 2>&1");
            INFO(js.out);
            CHECK(js.code == 0);
        }
        ++ran;
    }
    CHECK(ran >= 8);
    fs::remove_all(dir);
}

TEST_CASE("json: -inf, inf and NaN are strings by default, bare literals with --json-nonfinite literal") {
    // a causal mask puts -inf into scores_masked
    const std::string base =
        "'" + std::string(ATTN_BINARY) + "' forward --seq 3 --d-model 4 --heads 1 --mask causal --dump - ";
    const test::CliResult strict = test::run_shell(base + "2>/dev/null");
    REQUIRE(strict.code == 0);
    CHECK(strict.out.find("\"-Infinity\"") != std::string::npos);
    check_document(strict.out, "attn-dump", "--dump - (strict by default)");
    const test::CliResult literal = test::run_shell(base + "--json-nonfinite literal 2>/dev/null");
    REQUIRE(literal.code == 0);
    CHECK(literal.out.find("-Infinity") != std::string::npos);
    CHECK(literal.out.find("\"-Infinity\"") == std::string::npos);
    CHECK_THROWS(nlohmann::json::parse(literal.out));  // not RFC 8259: only for readers that ask for it
    // attn reads both back to the same floats
    const Dump a = dump_from_string(strict.out), b = dump_from_string(literal.out);
    CHECK(a.tensors.at("scores_masked").data == b.tensors.at("scores_masked").data);
    const auto& s = a.tensors.at("scores_masked").data;
    CHECK(std::isinf(s[1]));
    CHECK(s[1] < 0);
    if (have_node()) {
        const test::CliResult js = test::run_shell(
            base + "2>/dev/null | node -e 'JSON.parse(require(\"fs\").readFileSync(0, \"utf8\"))' 2>&1");
        CHECK(js.code == 0);
    }
}

TEST_CASE("json: --json-nonfinite has a one-line help and needs --json") {
    const test::CliResult h = test::run_attn("decode --help");
    const size_t at = h.out.find("--json-nonfinite");
    REQUIRE(at != std::string::npos);
    // the option's entry, up to the next option (CLI11 may put the text on its own line):
    // its text is one line that points to docs/formats.md
    const std::string entry = h.out.substr(at, h.out.find("\n  -", at) - at);
    const size_t doc = entry.find("docs/formats.md");
    REQUIRE(doc != std::string::npos);
    const size_t start = entry.rfind('\n', doc);
    CHECK(doc - (start == std::string::npos ? 0 : start) < 160);
    const test::CliResult r = test::run_attn("decode --json-nonfinite literal");
    CHECK(r.code == 2);
}
