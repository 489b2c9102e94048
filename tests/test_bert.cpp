// Tests of the BERT encoder: its pieces (LayerNorm, GELU), determinism,
// padding invariance with and without the key-padding mask, bad input, and
// parity with sentence-transformers on the fixture sentences
// (tests/fixtures/model/encoder.json, made by scripts/make-model-fixtures.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/model/bert.hpp"
#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "attn/model/tokenizer.hpp"
#include "test_util.hpp"

using attn::BertModel;
using attn::Tensor;

namespace {

const std::string kModelDir = std::string(ATTN_SOURCE_DIR) + "/data/models/all-MiniLM-L6-v2";

const BertModel& real_model() {
    static const BertModel m = BertModel::load(attn::locate_model(kModelDir));
    return m;
}

// A small random BERT: quick, and padding invariance holds for any weights.
attn::BertConfig small_config() {
    attn::BertConfig c;
    c.vocab_size = 50;
    c.hidden = 32;
    c.layers = 2;
    c.heads = 4;
    c.intermediate = 64;
    c.max_position = 40;
    return c;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

// Largest |a - b| between the real-token rows of sentence b of a batch output
// and the same sentence run alone.
double max_token_diff(const attn::BertOutput& batch, int64_t b, const attn::BertOutput& alone) {
    const int64_t T = batch.hidden.dim(1), D = batch.hidden.dim(2), len = alone.lengths[0];
    double worst = 0;
    for (int64_t t = 0; t < len; ++t)
        for (int64_t d = 0; d < D; ++d)
            worst = std::max(worst, static_cast<double>(std::fabs(batch.hidden.data[static_cast<size_t>((b * T + t) * D + d)] -
                                                                   alone.hidden.data[static_cast<size_t>(t * D + d)])));
    return worst;
}

void check_padding_invariance(const BertModel& m, const std::vector<std::vector<int32_t>>& batch, double tol) {
    attn::BertOptions masked;
    const attn::BertOutput together = m.forward(batch, masked);
    attn::BertOptions unmasked;
    unmasked.key_padding_mask = false;
    const attn::BertOutput together_nomask = m.forward(batch, unmasked);
    double worst = 0, worst_nomask = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
        const attn::BertOutput alone = m.forward({batch[b]}, masked);
        worst = std::max(worst, max_token_diff(together, static_cast<int64_t>(b), alone));
        worst_nomask = std::max(worst_nomask, max_token_diff(together_nomask, static_cast<int64_t>(b), alone));
        // the padded keys of a padded row get exactly zero weight in every layer and head
        for (const Tensor& w : together.attentions) {
            const int64_t H = w.dim(1), T = w.dim(2);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t i = 0; i < T; ++i)
                    for (int64_t j = alone.lengths[0]; j < T; ++j)
                        REQUIRE(w.data[static_cast<size_t>(((static_cast<int64_t>(b) * H + h) * T + i) * T + j)] == 0.0f);
        }
    }
    MESSAGE("padding invariance: max |batch - alone| = " << worst << " with the key mask, " << worst_nomask
                                                         << " without");
    CHECK(worst <= tol);
    CHECK(worst_nomask > 1e-3);  // without the mask, padding leaks into the real tokens
}

}  // namespace

TEST_CASE("bert: LayerNorm normalises each row, then scales and shifts") {
    std::vector<float> x{1, 2, 3, 4, 10, 10, 10, 10};
    const float g[4] = {1, 1, 2, 2}, b[4] = {0, 0, 0, 1};
    attn::layer_norm_rows(x.data(), g, b, 2, 4, 1e-12f);
    const float s = 1.0f / std::sqrt(1.25f);  // var of 1..4 is 1.25
    CHECK(x[0] == doctest::Approx(-1.5f * s));
    CHECK(x[3] == doctest::Approx(2 * 1.5f * s + 1));
    CHECK(x[4] == 0.0f);  // a constant row has no variance: all (x - mean) = 0
    CHECK(x[7] == 1.0f);
}

TEST_CASE("bert: the vectorised erf GELU agrees with std::erf to float rounding") {
    std::vector<float> x;
    for (float v = -10; v <= 10; v += 0.01f) x.push_back(v);
    std::vector<float> y = x;
    attn::gelu_erf(y.data(), static_cast<int64_t>(y.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double ref = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
        worst = std::max(worst, std::fabs(y[i] - ref) / std::max(1.0, std::fabs(ref)));
    }
    // ~1e-6 relative: a few float ulps (Eigen's erf is a rational approximation)
    CHECK(worst < 2e-6);
}

TEST_CASE("bert: a random model is deterministic per seed and independent of --threads") {
    const BertModel a = BertModel::random(small_config(), 7);
    const BertModel b = BertModel::random(small_config(), 7);
    const BertModel c = BertModel::random(small_config(), 8);
    CHECK(a.word_emb.data == b.word_emb.data);
    CHECK(a.word_emb.data != c.word_emb.data);
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 3}};
    attn::BertOptions one, four;
    four.threads = 4;
    const attn::BertOutput o1 = a.forward(ids, one), o4 = a.forward(ids, four);
    CHECK(o1.hidden.data == o4.hidden.data);
    CHECK(o1.sentence.data == o4.sentence.data);
    REQUIRE(o1.attentions.size() == 2);
    CHECK(o1.attentions[0].shape == attn::Shape{3, 4, 6, 6});
    for (int64_t b = 0; b < 3; ++b) {  // sentence vectors have unit length
        double ss = 0;
        for (int64_t d = 0; d < 32; ++d) ss += std::pow(o1.sentence.data[static_cast<size_t>(b * 32 + d)], 2);
        CHECK(ss == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("bert: padding invariance, random weights: equal with the key mask, not without") {
    const BertModel m = BertModel::random(small_config(), 3);
    // tolerance 1e-5: the batch and the lone run do the same arithmetic on the
    // real tokens, except that GEMMs over T rows vs len rows may block differently
    check_padding_invariance(m, {{2, 5, 6, 7, 8, 9, 10, 3}, {2, 5, 3}, {2, 30, 31, 32, 3}}, 1e-5);
}

TEST_CASE("bert: bad input is an InputError") {
    const BertModel m = BertModel::random(small_config(), 1);
    CHECK_THROWS_AS(m.forward({}), attn::InputError);
    CHECK_THROWS_AS(m.forward({{}}), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward({{2, 50, 3}}), doctest::Contains("outside the vocabulary"), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward({std::vector<int32_t>(41, 5)}), doctest::Contains("positions"), attn::InputError);
    CHECK_THROWS_WITH_AS(attn::locate_model("/nonexistent/model"), doctest::Contains("scripts/fetch-model.sh"),
                         attn::InputError);
    const std::string tmp = std::filesystem::temp_directory_path() / "attn-test-incomplete-model";
    std::filesystem::create_directories(tmp);
    std::ofstream(tmp + "/config.json") << "{}";
    CHECK_THROWS_WITH_AS(attn::locate_model(tmp), doctest::Contains("vocab.txt is missing"), attn::InputError);
    std::filesystem::remove_all(tmp);
}

TEST_CASE("bert: sentence embeddings match sentence-transformers within 1e-4 (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/encoder.json");
    const BertModel& m = real_model();
    const auto tok = attn::WordPieceTokenizer::load(kModelDir + "/vocab.txt", m.config.max_len);
    std::vector<std::vector<int32_t>> batch;
    for (const auto& s : fx["sentences"]) {
        const auto enc = tok.encode(s["text"].get<std::string>());
        CHECK(enc.ids == s["ids"].get<std::vector<int32_t>>());
        batch.push_back(enc.ids);
    }
    attn::BertOptions opt;
    opt.record_attention = false;
    const attn::BertOutput out = m.forward(batch, opt);  // one padded batch, as sentence-transformers ran it
    double worst = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
        const auto ref = fx["sentences"][b]["embedding"].get<std::vector<float>>();
        REQUIRE(ref.size() == 384);
        for (size_t d = 0; d < ref.size(); ++d)
            worst = std::max(worst, static_cast<double>(std::fabs(out.sentence.data[b * 384 + d] - ref[d])));
    }
    MESSAGE("sentence embedding parity: max abs error " << worst << " over " << batch.size() << " sentences");
    CHECK(worst <= 1e-4);
}

TEST_CASE("bert: attention weights and last hidden state match transformers' BertModel (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/encoder.json");
    const nlohmann::json& a = fx["attention"];
    const BertModel& m = real_model();
    const attn::BertOutput out = m.forward({a["ids"].get<std::vector<int32_t>>()});
    double worst_w = 0, worst_h = 0;
    for (const auto& [layer, w] : a["layers"].items()) {
        const Tensor& got = out.attentions[static_cast<size_t>(std::stoi(layer))];
        const auto ref = w.get<std::vector<float>>();
        REQUIRE(ref.size() == got.data.size());
        for (size_t k = 0; k < ref.size(); ++k) worst_w = std::max(worst_w, static_cast<double>(std::fabs(got.data[k] - ref[k])));
    }
    const auto hid = a["last_hidden"].get<std::vector<float>>();
    REQUIRE(hid.size() == out.hidden.data.size());
    for (size_t k = 0; k < hid.size(); ++k) worst_h = std::max(worst_h, static_cast<double>(std::fabs(out.hidden.data[k] - hid[k])));
    MESSAGE("attention parity: max abs " << worst_w << "; last hidden state: max abs " << worst_h);
    // weights are probabilities in [0, 1]: 1e-5 is ~100 float ulps of accumulated reordering over 6 layers
    CHECK(worst_w <= 1e-5);
    // hidden states are O(1)-O(10) before pooling: 1e-4 absolute
    CHECK(worst_h <= 1e-4);
}

TEST_CASE("bert: padding invariance on the real model (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const BertModel& m = real_model();
    const auto tok = attn::WordPieceTokenizer::load(kModelDir + "/vocab.txt", m.config.max_len);
    std::vector<std::vector<int32_t>> batch;
    for (const char* s : {"The animal didn't cross the street because it was too tired", "Short.",
                          "A man is playing a guitar."})
        batch.push_back(tok.encode(s).ids);
    check_padding_invariance(m, batch, 1e-5);
}

using attn::test::run_attn;

TEST_CASE("attn model: a missing or incomplete model folder is exit 2 with the fetch command") {
    attn::test::CliResult r = run_attn("model entropy --text hello --model /nonexistent/model");
    CHECK(r.code == 2);
    CHECK(r.out.find("attn: error: --model: no model folder at '/nonexistent/model' (run scripts/fetch-model.sh") == 0);
    const std::string tmp = std::filesystem::temp_directory_path() / "attn-test-cli-incomplete";
    std::filesystem::create_directories(tmp);
    std::ofstream(tmp + "/config.json") << "{}";
    std::ofstream(tmp + "/vocab.txt") << "[PAD]\n";
    r = run_attn("model probe --from it --to animal --model " + tmp);
    CHECK(r.code == 2);
    CHECK(r.out.find("model.safetensors is missing") != std::string::npos);
    std::ofstream(tmp + "/model.safetensors") << "garbage!";
    std::ofstream(tmp + "/config.json") << R"({"vocab_size": 4, "hidden_size": 4, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, "type_vocab_size": 2})";
    std::ofstream(tmp + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
    r = run_attn("model attention --text hello --model " + tmp);  // corrupt weights: one line, exit 2
    CHECK(r.code == 2);
    CHECK(r.out.find("model.safetensors: not a valid safetensors file") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    std::filesystem::remove_all(tmp);
}

TEST_CASE("attn model: entropy table, probe ranking and bad input on the real model (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string m = " --model " + kModelDir;
    const std::string text = "--text \"The animal didn't cross the street because it was too tired\"";
    attn::test::CliResult r = run_attn("model entropy " + text + m);
    REQUIRE(r.code == 0);
    for (const char* row : {"\n0     |", "\n5     |"}) CHECK(r.out.find(row) != std::string::npos);
    r = run_attn("model entropy --json " + text + m);
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const auto trained = j["models"][0]["entropy"].get<std::vector<std::vector<double>>>();
    const auto random = j["models"][1]["entropy"].get<std::vector<std::vector<double>>>();
    REQUIRE(trained.size() == 6);
    REQUIRE(trained[0].size() == 12);
    double mt = 0, mr = 0;
    for (int l = 0; l < 6; ++l)
        for (int h = 0; h < 12; ++h) mt += trained[l][h] / 72, mr += random[l][h] / 72;
    MESSAGE("mean normalised entropy: trained " << mt << ", random " << mr);
    CHECK(mr > 0.95);       // random init: near-uniform heads
    CHECK(mt < mr - 0.2);   // trained heads are sharper
    r = run_attn("model probe --from it --to animal,street --json" + m);
    REQUIRE(r.code == 0);
    const nlohmann::json p = nlohmann::json::parse(r.out);
    CHECK(p["heads"].size() == 72);
    const double top = p["heads"][0]["weight"][0].get<double>();
    CHECK(top >= p["heads"][71]["weight"][0].get<double>());
    CHECK(top > 0.5);  // some head puts most of "it"'s weight on "animal" (C34)
    for (const char* bad : {"model attention --text hi --layer 6",
                            "model attention --text hi --layer 0 --head 12", "model probe --from dog --to animal",
                            "model probe --from it --to animal,", "model entropy --text hi --dup-threshold 0"}) {
        CAPTURE(bad);
        r = run_attn(std::string(bad) + m);
        CHECK(r.code == 2);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    const std::string dump = (std::filesystem::temp_directory_path() / "attn-test-model-dump.json").string();
    const std::string svg = (std::filesystem::temp_directory_path() / "attn-test-model.svg").string();
    r = run_attn("model attention --text \"it was tired\" --layer 1 --dump " + dump + " --svg " + svg + m);
    REQUIRE(r.code == 0);
    const attn::Dump d = attn::read_dump_file(dump);
    const auto toks = d.config["tokens"].get<std::vector<std::string>>();
    CHECK(toks == std::vector<std::string>{"[CLS]", "it", "was", "tired", "[SEP]"});
    CHECK(d.tensors.at("attention").shape == attn::Shape{6, 1, 12, 5, 5});
    CHECK(attn::read_file(svg).find("<svg") != std::string::npos);
    std::filesystem::remove(dump);
    std::filesystem::remove(svg);
    std::string long_text(300 * 5, ' ');
    for (size_t i = 0; i < long_text.size(); i += 5) long_text.replace(i, 4, "word");
    r = run_attn("model entropy --text \"" + long_text + "\"" + m);
    CHECK(r.code == 2);
    CHECK(r.out.find("more than the model's maximum of 256") != std::string::npos);
}
