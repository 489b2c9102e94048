// Model folders as today's libraries save them: tests/fixtures/st-tiny is what SentenceTransformer.save
// (sentence-transformers 6.3, transformers 5.25) writes for a tiny random BERT: tokenizer.json and no
// vocab.txt, the pooling config as {"pooling_mode": "mean"}, the truncation length only as
// tokenizer_config.json's model_max_length (16), Normalize in modules.json. reference.json holds what
// SentenceTransformer.encode gives (scripts/make-st-fixtures.py made both).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bert.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kFolder = attn::test::source_path("tests/fixtures/st-tiny");

nlohmann::json reference() { return nlohmann::json::parse(attn::read_file(kFolder + "/reference.json")); }

std::string copy_folder(const std::string& tag) {
    const std::string d = attn::test::temp_dir(tag) + "/model";
    fs::copy(kFolder, d, fs::copy_options::recursive);
    return d;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string load_error(const std::string& dir) {
    try {
        const auto files = attn::locate_model(dir);
        attn::load_tokenizer(files, attn::read_bert_config(files));
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("st folder: SentenceTransformer.save's folder reads as sentence-transformers reads it") {
    const attn::ModelFiles files = attn::locate_model(kFolder);
    CHECK(files.vocab.empty());  // no vocab.txt: the vocabulary is tokenizer.json's
    CHECK(!files.tokenizer_json.empty());
    const attn::BertConfig c = attn::read_bert_config(files);
    CHECK(c.max_len == 16);  // model_max_length, below the 64 positions: sentence-transformers' max_seq_length
    CHECK(c.max_position == 64);
    CHECK(c.pooling == attn::BertPooling::Mean);
    CHECK(c.normalize);
    CHECK(c.casing.lower_case);
    CHECK(c.casing.strip_accents);  // null in the normaliser: as lowercase
    const nlohmann::json ref = reference();
    CHECK(ref["max_seq_length"] == 16);
    const attn::WordPieceTokenizer tok = attn::load_tokenizer(files, c);
    const attn::BertModel m = attn::BertModel::load(files);
    int cut = 0;
    for (const auto& row : ref["texts"]) {
        const std::string text = row["text"];
        INFO(text);
        const attn::Encoding enc = tok.encode(text);
        CHECK(enc.ids == row["ids"].get<std::vector<int32_t>>());
        CHECK(enc.full_length == row["full_length"].get<int64_t>());
        cut += enc.truncated ? 1 : 0;
        attn::BertOptions o;
        o.record_attention = false;
        const attn::BertOutput out = m.forward({enc.ids}, o);
        const std::vector<float> want = row["embedding"].get<std::vector<float>>();
        REQUIRE(out.sentence.data.size() == want.size());
        double worst = 0;
        for (size_t k = 0; k < want.size(); ++k)
            worst = std::max(worst, std::abs(static_cast<double>(out.sentence.data[k]) - want[k]));
        MESSAGE(text.substr(0, 24) << ": max abs diff from SentenceTransformer.encode " << worst);
        CHECK(worst <= 2e-5);
    }
    CHECK(cut == 1);  // the long text was cut at 16, as encode cuts it
}

TEST_CASE("st folder: attn model embed gives SentenceTransformer.encode's embeddings, the long text cut at 16") {
    const nlohmann::json ref = reference();
    const std::string dir = attn::test::temp_dir("st-embed");
    std::string lines;
    for (const auto& row : ref["texts"]) lines += row["text"].get<std::string>() + "\n";
    lines.pop_back();
    write(dir + "/texts.txt", lines);
    // cut by default, as encode cuts it, with one note on stderr (never stdout) naming how many and to what length
    const std::string bin = "'" + std::string(ATTN_BINARY) + "' model embed --model '" + kFolder + "' --file " + dir +
                            "/texts.txt";
    auto r = attn::test::run_shell(bin + " --json " + dir + "/e.json 2>&1 >/dev/null");  // stderr alone
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(r.out == "attn: note: 1 of " + std::to_string(ref["texts"].size()) + " text(s) cut to 16 tokens (the "
                   "model's max_seq_length), as sentence-transformers cuts them: --file " + dir +
                   "/texts.txt: line 5 (--no-truncate refuses them instead)\n");
    const auto out = attn::test::run_shell(bin + " --json - 2>/dev/null");  // stdout alone: strict JSON
    REQUIRE(out.code == 0);
    const nlohmann::json doc = nlohmann::json::parse(out.out);
    CHECK(doc["truncated"] == nlohmann::json::array({4}));
    CHECK(doc["max_tokens"] == 16);
    for (size_t i = 0; i < doc["sentences"].size(); ++i) CHECK(doc["sentences"][i]["truncated"] == (i == 4));
    CHECK(doc["sentences"][4]["tokens"] == 16);
    // --no-truncate refuses it, naming the line and the limit of 16; --truncate is the default said aloud
    r = attn::test::run_attn("model embed --model '" + kFolder + "' --no-truncate --file " + dir + "/texts.txt");
    CHECK(r.code == 2);
    CHECK(r.out.find("line 5: is 27 tokens long, more than the limit of 16") != std::string::npos);
    r = attn::test::run_attn("model embed --model '" + kFolder + "' --truncate --file " + dir + "/texts.txt --json " +
                             dir + "/e2.json");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(attn::read_file(dir + "/e2.json") == attn::read_file(dir + "/e.json"));
    const nlohmann::json got = nlohmann::json::parse(attn::read_file(dir + "/e.json"));
    REQUIRE(got["sentences"].size() == ref["texts"].size());
    for (size_t i = 0; i < ref["texts"].size(); ++i) {
        const auto want = ref["texts"][i]["embedding"].get<std::vector<double>>();
        const auto have = got["sentences"][i]["embedding"].get<std::vector<double>>();
        REQUIRE(have.size() == want.size());
        for (size_t k = 0; k < want.size(); ++k) CHECK(std::abs(have[k] - want[k]) <= 2e-5);
    }
    fs::remove_all(dir);
}

TEST_CASE("st folder: the pooling config in either form, and what a folder lacks named with what writes it") {
    const std::string d = copy_folder("st-forms");
    // the old boolean flags, and the new word
    write(d + "/1_Pooling/config.json", R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": true})");
    CHECK(attn::read_bert_config(attn::locate_model(d)).pooling == attn::BertPooling::Cls);
    write(d + "/1_Pooling/config.json", R"({"embedding_dimension": 32, "pooling_mode": "cls"})");
    CHECK(attn::read_bert_config(attn::locate_model(d)).pooling == attn::BertPooling::Cls);
    write(d + "/1_Pooling/config.json", R"({"embedding_dimension": 32, "pooling_mode": "max"})");
    CHECK(load_error(d).find("\"pooling_mode\" is \"max\"; attn implements \"mean\" and \"cls\"") != std::string::npos);
    write(d + "/1_Pooling/config.json", R"({"pooling_mode": "mean"})");
    // sentence_bert_config.json's max_seq_length, when there, wins (older sentence-transformers)
    write(d + "/sentence_bert_config.json", R"({"max_seq_length": 12})");
    CHECK(attn::read_bert_config(attn::locate_model(d)).max_len == 12);
    // no Normalize module: the vector is not normalised
    write(d + "/modules.json",
          R"([{"idx": 0, "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"}])");
    CHECK(!attn::read_bert_config(attn::locate_model(d)).normalize);
    // a normaliser other than BERT's is refused by name
    {
        nlohmann::json t = nlohmann::json::parse(attn::read_file(d + "/tokenizer.json"));
        t["normalizer"] = {{"type", "NFC"}};
        write(d + "/tokenizer.json", t.dump());
        CHECK(load_error(d).find("the normalizer is \"NFC\", not BertNormalizer") != std::string::npos);
    }
    // missing pieces: named, with what writes them; never the fetch script
    for (const char* gone : {"tokenizer.json", "model.safetensors", "config.json"}) {
        CAPTURE(gone);
        const std::string e = copy_folder("st-missing");
        fs::remove(e + "/" + gone);
        const std::string msg = load_error(e);
        CHECK(msg.find("is missing") != std::string::npos);
        CHECK(msg.find("save_pretrained") != std::string::npos);
        CHECK(msg.find("fetch") == std::string::npos);
        const auto r = attn::test::run_attn("model embed --model '" + e + "' --text hi");
        CHECK(r.code == 2);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
}

// A GPT-2 folder as transformers 5's save_pretrained writes it: tokenizer.json and no vocab.json or
// merges.txt, "dtype" in config.json, a generation_config.json beside it (tests/fixtures/gpt2-t5).
TEST_CASE("st folder: a GPT-2 folder saved by transformers 5 loads, with its ids and next-token probabilities") {
    const std::string dir = attn::test::source_path("tests/fixtures/gpt2-t5");
    const nlohmann::json ref = nlohmann::json::parse(attn::read_file(dir + "/reference.json"));
    for (const auto& row : ref["texts"]) {
        const std::string text = row["text"];
        INFO(text);
        const auto r = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' model next --model '" + dir +
                                             "' --text '" + text + "' --top 5 --json");
        REQUIRE(r.code == 0);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        std::vector<int32_t> ids;
        for (const auto& t : j["tokens"]) ids.push_back(t["id"]);
        CHECK(ids == row["ids"].get<std::vector<int32_t>>());
        const auto probs = row["next_probs"].get<std::vector<double>>();
        REQUIRE(j["next"].size() == 5);
        for (const auto& n : j["next"]) {
            const double want = probs[n["id"].get<size_t>()];
            CHECK(std::abs(n["prob"].get<double>() - want) <= 2e-5);
        }
        CHECK(j["next"][0]["id"].get<size_t>() ==
              static_cast<size_t>(std::max_element(probs.begin(), probs.end()) - probs.begin()));
    }
}
