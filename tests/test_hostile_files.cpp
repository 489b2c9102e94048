// Hostile files and text given to attn's readers: each is a clean refusal (exit 2,
// one line naming the file) or a documented result, never a crash or an internal error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "attn/model/bert.hpp"
#include "attn/model/tokenizer.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// `attn ARGS` exits 2 with one line "attn: error: ..." that mentions each of `must_mention`.
void check_refused_naming(const std::string& args, std::initializer_list<std::string> must_mention) {
    INFO(args);
    const auto r = test::run_attn(args);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.rfind("attn: error: ", 0) == 0);
    for (const std::string& m : must_mention) CHECK(r.out.find(m) != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

// `attn ARGS` with stdout alone (stderr dropped).
test::CliResult stdout_of(const std::string& args) {
    std::string cmd = "'";
    cmd.append(ATTN_BINARY).append("' ").append(args).append(" 2>/dev/null");
    return test::run_shell(cmd);
}

}  // namespace

TEST_CASE("hostile files: JSON nested 200,000 levels deep is refused naming the file, not a stack overflow") {
    const std::string dir = test::temp_dir("deep");
    const std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
    const std::string in_config = dir + "/in_config.json";
    write_text(in_config, R"({"format": "attn-dump", "version": 1, "config": {"x": )" + deep + R"(}, "tensors": {}})");
    const std::string in_data = dir + "/in_data.json";
    write_text(in_data,
               R"({"format": "attn-dump", "version": 1, "tensors": {"x": {"shape": [1], "data": )" + deep + "}}}");
    for (const std::string& f : {in_config, in_data}) {
        check_refused_naming("view '" + f + "'", {f});
        check_refused_naming("forward --input '" + f + "'", {f});
    }
    // The model's config.json is read before the other two files are opened.
    const std::string model = dir + "/model";
    fs::create_directory(model);
    write_text(model + "/config.json", R"({"vocab_size": )" + deep + "}");
    write_text(model + "/vocab.txt", "");
    write_text(model + "/model.safetensors", "");
    check_refused_naming("model entropy --model '" + model + "' --text hi", {model + "/config.json"});
    fs::remove_all(dir);
}

TEST_CASE("hostile files: a corrupt model is refused naming the file, never run to all-zero attention "
          "(skipped without the model)") {
    if (!test::model_or_skip()) return;
    const std::string src = fs::absolute(std::getenv("ATTN_MODEL_DIR")).string();
    const std::string dir = test::temp_dir("corrupt-model");
    const std::string config_text = read_file(src + "/config.json");
    const std::string vocab_text = read_file(src + "/vocab.txt");
    // A fresh copy of the model with `file` replaced by `text`; the weights are linked, not copied, unless replaced.
    auto model_with = [&](const std::string& tag, const std::string& file, const std::string& text) {
        const std::string m = dir + "/" + tag;
        fs::create_directory(m);
        write_text(m + "/config.json", config_text);
        write_text(m + "/vocab.txt", vocab_text);
        if (file != "model.safetensors") fs::create_symlink(src + "/model.safetensors", m + "/model.safetensors");
        write_text(m + "/" + file, text);
        return m;
    };
    auto config_with = [&](const std::string& key, const std::string& value_text) {
        nlohmann::json j = nlohmann::json::parse(config_text);
        j[key] = 0;
        std::string t = j.dump();
        const std::string from = "\"" + key + "\":0";
        return t.replace(t.find(from), from.size(), "\"" + key + "\":" + value_text);
    };
    struct Case {
        const char* tag;
        const char* file;
        std::string text;
    };
    const std::vector<Case> cases = {
        {"eps-negative", "config.json", config_with("layer_norm_eps", "-1")},
        {"eps-nan", "config.json", config_with("layer_norm_eps", "NaN")},
        {"eps-underflow", "config.json", config_with("layer_norm_eps", "1e-300")},
        {"eps-string", "config.json", config_with("layer_norm_eps", "\"small\"")},
        {"heads-zero", "config.json", config_with("num_attention_heads", "0")},
        {"heads-indivisible", "config.json", config_with("num_attention_heads", "5")},
        {"vocab-shifted", "vocab.txt", vocab_text.substr(vocab_text.find('\n') + 1)},
        {"vocab-extra", "vocab.txt", vocab_text + "extra\n"},
    };
    for (const auto& c : cases) {
        const std::string m = model_with(c.tag, c.file, c.text);
        check_refused_naming("model entropy --model '" + m + "' --text hi", {m + "/" + c.file});
    }

    // One NaN in a LayerNorm weight: the error names the weights file and the tensor.
    std::string st = read_file(src + "/model.safetensors");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(st[static_cast<size_t>(i)]);
    const nlohmann::json header = nlohmann::json::parse(st.substr(8, n));
    const std::string name = header.contains("embeddings.LayerNorm.weight") ? "embeddings.LayerNorm.weight"
                                                                            : "bert.embeddings.LayerNorm.weight";
    REQUIRE(header[name]["dtype"] == "F32");
    const float nan = NAN;
    std::memcpy(st.data() + 8 + n + header[name]["data_offsets"][0].get<uint64_t>() + 4 * 5, &nan, 4);
    const std::string m = model_with("weight-nan", "model.safetensors", st);
    check_refused_naming("model entropy --model '" + m + "' --text hi", {m + "/model.safetensors", name});
    fs::remove_all(dir);
}

TEST_CASE("hostile text: bytes that are not UTF-8 read as U+FFFD, so every JSON output stays valid "
          "(skipped without the model)") {
    if (!test::model_or_skip()) return;
    const std::string dir = test::temp_dir("bad-utf8");
    const std::string bad = "\"$(printf 'caf\\303 dog \\377\\376')\"";  // a cut-off é, then two stray bytes
    const std::string probe = "model probe --json --text " + bad + " --from dog --to \"$(printf 'caf\\303')\"";
    for (const std::string& args : {"model entropy --json --text " + bad, probe}) {
        INFO(args);
        const auto r = test::run_attn(args);
        INFO(r.out);
        REQUIRE(r.code == 0);
        const nlohmann::json j = nlohmann::json::parse(r.out);  // throws on invalid UTF-8
        CHECK(j["text"] == "caf\xEF\xBF\xBD dog \xEF\xBF\xBD\xEF\xBF\xBD");
    }
    const std::string dump = dir + "/a.json";
    const auto r = test::run_attn("model attention --text \"$(printf '\\377\\376')\" --dump " + dump);
    INFO(r.out);
    REQUIRE(r.code == 0);
    const Dump d = read_dump_file(dump);
    CHECK(d.config["text"] == "\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(d.config["tokens"] == std::vector<std::string>{"[CLS]", "[SEP]"});
    fs::remove_all(dir);
}

TEST_CASE("hostile text: blank text is [CLS] [SEP] and a typed [MASK] is the mask token, as in HF "
          "(skipped without the model)") {
    if (!test::model_or_skip()) return;
    for (const char* text : {"''", "' \t '"}) {
        const auto r = test::run_attn(std::string("model entropy --json --text ") + text);
        INFO(r.out);
        REQUIRE(r.code == 0);
        CHECK(nlohmann::json::parse(r.out)["tokens"] == std::vector<std::string>{"[CLS]", "[SEP]"});
    }
    check_refused_naming("model probe --text '' --from a --to b", {"--from", "has none"});
    {  // embed: an empty --text is the empty sentence, the same as an empty line of --file
        const std::string dir = test::temp_dir("embed-empty");
        FILE* fp = std::fopen((dir + "/two.txt").c_str(), "w");
        std::fputs("\nhi\n", fp);
        std::fclose(fp);
        const auto e = test::run_shell("'" + std::string(ATTN_BINARY) + "' model embed --json --text '' --text hi");
        const auto f =
            test::run_shell("'" + std::string(ATTN_BINARY) + "' model embed --json --file '" + dir + "/two.txt'");
        INFO(e.out);
        REQUIRE(e.code == 0);
        REQUIRE(f.code == 0);
        const auto es = nlohmann::json::parse(e.out)["sentences"], fs_ = nlohmann::json::parse(f.out)["sentences"];
        REQUIRE(es.size() == 2);
        REQUIRE(fs_.size() == 2);
        CHECK(es[0]["tokens"] == 2);  // [CLS] [SEP]
        for (size_t i = 0; i < 2; ++i) {
            CHECK(es[i]["tokens"] == fs_[i]["tokens"]);
            CHECK(es[i]["embedding"] == fs_[i]["embedding"]);
        }
        std::filesystem::remove_all(dir);
    }
    const auto r = test::run_attn("model entropy --json --text 'the [MASK] sat.[SEP]'");
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["tokens"] ==
          std::vector<std::string>{"[CLS]", "the", "[MASK]", "sat", ".", "[SEP]", "[SEP]"});
    // ... and a word --from and --to can name.
    const auto p = test::run_attn("model probe --json --text 'the [MASK] sat' --from '[MASK]' --to sat");
    INFO(p.out);
    REQUIRE(p.code == 0);
    CHECK(nlohmann::json::parse(p.out)["from_tokens"] == std::vector<int64_t>{2});
}

TEST_CASE("hostile files: --json-nonfinite string|null dumps are strict JSON that attn reads back") {
    const std::string dir = test::temp_dir("nonfinite");
    for (const char* mode : {"string", "null"}) {
        INFO(mode);
        const std::string dump = dir + "/" + mode + ".json";
        const auto r = test::run_attn("forward --mask causal --dump " + dump + " --json-nonfinite " + mode);
        INFO(r.out);
        REQUIRE(r.code == 0);
        const std::string text = read_file(dump);
        CHECK(text.find("[-Infinity") == std::string::npos);
        CHECK(text.find(", -Infinity") == std::string::npos);
        CHECK(nlohmann::json::accept(text));  // strict RFC 8259
        const float first_masked = read_dump_file(dump).tensors.at("scores_masked").data[1];  // query 0 sees key 0 only
        CHECK((std::string(mode) == "string" ? first_masked == -INFINITY : std::isnan(first_masked)));
        CHECK(test::run_attn("view " + dump).code == 0);
        CHECK(test::run_attn("forward --input " + dump).code == 0);
    }
    check_refused_naming("forward --dump - --json-nonfinite nan", {"--json-nonfinite"});
    check_refused_naming("model attention --text hi --dump - --json-nonfinite", {"--json-nonfinite"});
    fs::remove_all(dir);
}

TEST_CASE("hostile files: --json-nonfinite applies to every --json, and is refused without it") {
    // The writers' JSON holds no non-finite value today (json_text's own test in test_dump.cpp
    // checks the three modes); here each takes the option and writes strict JSON with it.
    for (const char* args : {"variance --samples 64 --d-k 1,4 --json", "tour --from 15 --json", "lesson 4 --json",
                             "bench --seq 16 --impl reference --reps 1 --warmup 0 --json"}) {
        INFO(args);
        const auto r = stdout_of(std::string(args) + " --json-nonfinite string");
        CHECK(r.code == 0);
        CHECK(nlohmann::json::accept(r.out));
    }
    for (const char* args :
         {"variance --json-nonfinite string", "lesson 4 --json-nonfinite null", "bench --json-nonfinite string",
          "forward --json-nonfinite string", "model entropy --text hi --json-nonfinite string"})
        check_refused_naming(args, {"--json-nonfinite"});
}

TEST_CASE("hostile files: --json-nonfinite on every JSON output of attn model (skipped without the model)") {
    if (!test::model_or_skip()) return;
    for (const char* args : {"model entropy --text 'the cat' --json", "model probe --from it --to animal --json",
                             "model bench --batch 1 --reps 1 --json"}) {
        INFO(args);
        const auto r = stdout_of(std::string(args) + " --json-nonfinite string");
        CHECK(r.code == 0);
        CHECK(nlohmann::json::accept(r.out));
    }
}

TEST_CASE("hostile files: a token id outside the vocabulary names the vocabulary file") {
    // attn's own ids come from the tokenizer, checked against vocab_size when the model loads,
    // so this message is for library callers who pass ids of their own.
    const std::string dir = test::temp_dir("vocab");
    const std::string vocab = dir + "/vocab.txt";
    write_text(vocab, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n");
    const WordPieceTokenizer tok = WordPieceTokenizer::load(vocab, 16);
    CHECK(tok.token(5) == "cat");
    CHECK_THROWS_WITH_AS(tok.token(6),
                         doctest::Contains((vocab + ": token id 6 is outside the vocabulary (size 6)").c_str()),
                         InputError);
    BertConfig tiny;
    tiny.vocab_size = 6;
    tiny.hidden = 8;
    tiny.heads = 2;
    tiny.layers = 1;
    tiny.intermediate = 16;
    tiny.max_position = 16;
    const BertModel random = BertModel::random(tiny, 1);
    CHECK_THROWS_WITH_AS(random.forward({{2, 39145, 3}}),
                         doctest::Contains("token id 39145 is outside the vocabulary [0, 6)"), InputError);
    fs::remove_all(dir);
}

TEST_CASE(
    "hostile files: the real model names its vocab.txt for a token id it does not have (skipped without the model)") {
    if (!test::model_or_skip()) return;
    const ModelFiles files = locate_model(std::getenv("ATTN_MODEL_DIR"));
    const BertModel m = BertModel::load(files);
    CHECK_THROWS_WITH_AS(
        m.forward({{101, 39145, 102}}),
        doctest::Contains((files.vocab + ": token id 39145 is outside the vocabulary [0, 30522)").c_str()), InputError);
}

TEST_CASE("hostile files: a dump too large to read in memory is refused from its size, before reading it") {
    const std::string dir = test::temp_dir("huge");
    const std::string huge = dir + "/huge.json";
    write_text(huge, "");
    std::error_code ec;
    fs::resize_file(huge, uint64_t{1} << 40, ec);  // 1 TiB, sparse: nothing is written
    if (ec) {
        test::skip("this file system cannot hold a sparse 1 TiB file: " + ec.message());
        fs::remove_all(dir);
        return;
    }
    check_refused_naming("view '" + huge + "'", {huge, "1.0 TiB of JSON", "would need"});
    check_refused_naming("view '" + huge + "' --svg '" + dir + "/never.svg'", {huge});
    check_refused_naming("forward --input '" + huge + "' --dump '" + dir + "/never.json'", {"--input", huge});
    CHECK(!fs::exists(dir + "/never.svg"));
    CHECK(!fs::exists(dir + "/never.json"));
    fs::remove_all(dir);
}
