// Tests of the config-driven BERT encoder: a random BertModel of another shape than MiniLM
// (hidden 64, 2 layers, 4 heads, intermediate 96, vocabulary 300, cased), made by transformers
// (tests/fixtures/bert-tiny/, scripts/make-bert-fixtures.py), read from its folder: the same
// token ids as transformers' BertTokenizer(do_lower_case=False), the last hidden state within
// 1e-4 relative and every attention weight within 1e-5 of BertModel's; the casing, pooling and
// normalisation read from the folder; and every setting the encoder does not implement refused
// in one line, through the library and through `attn model attention` (exit 2).
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
#include "attn/io/safetensors.hpp"
#include "attn/model/bert.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using attn::BertModel;
using attn::Tensor;

namespace {

const std::string kTiny = attn::test::source_path("tests/fixtures/bert-tiny");

// True when the fixture is there; otherwise skips the test case, saying how to make it.
bool fixture_or_skip() {
    std::error_code ec;
    for (const char* f : {"config.json", "vocab.txt", "model.safetensors", "reference.safetensors", "reference.json"})
        if (!fs::is_regular_file(kTiny + "/" + f, ec)) {
            MESSAGE("no " << kTiny << "/" << f << " (make it: python3 scripts/make-bert-fixtures.py)");
            attn::test::skip("no BERT parity fixture in " + kTiny);
            return false;
        }
    return true;
}

// max |a - b| / max |b|: the error relative to the reference's scale
double rel_diff(const float* a, const float* b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; ++i) {
        d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
        m = std::max(m, std::fabs(static_cast<double>(b[i])));
    }
    return d / m;
}
double abs_diff(const float* a, const float* b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    return d;
}

// A copy of the fixture's model files to change.
std::string copy_tiny(const std::string& tag) {
    const std::string d = attn::test::temp_dir(tag);
    for (const char* f : {"config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json"})
        fs::copy_file(kTiny + "/" + f, d + "/" + f, fs::copy_options::overwrite_existing);
    return d;
}
void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
void edit_json(const std::string& path, const nlohmann::json::json_pointer& at, const nlohmann::json& value) {
    nlohmann::json j = nlohmann::json::parse(attn::read_file(path));
    j[at] = value;
    write(path, j.dump(1));
}
std::string config_error(const std::string& dir) {
    try {
        const auto files = attn::locate_model(dir);
        const auto c = attn::read_bert_config(files);
        (void)attn::load_tokenizer(files, c);
        (void)BertModel::load(files);
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("bert config: a random BertModel of another shape gives transformers' ids, hidden states and attention") {
    if (!fixture_or_skip()) return;
    const attn::ModelFiles files = attn::locate_model(kTiny);
    const attn::BertConfig c = attn::read_bert_config(files);
    CHECK(c.hidden == 64);
    CHECK(c.layers == 2);
    CHECK(c.heads == 4);
    CHECK(c.intermediate == 96);
    CHECK(c.vocab_size == 300);
    CHECK(c.max_position == 64);
    CHECK(c.max_len == 64);
    CHECK_FALSE(c.casing.lower_case);  // tokenizer_config.json: do_lower_case false
    CHECK_FALSE(c.casing.strip_accents);
    const attn::WordPieceTokenizer tok = attn::load_tokenizer(files, c);
    const BertModel m = BertModel::load(files);
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const nlohmann::json fx = nlohmann::json::parse(attn::read_file(kTiny + "/reference.json"));
    const auto& rows = fx.at("texts");
    REQUIRE(rows.size() >= 5);
    double worst_h = 0, worst_a = 0, worst_fast = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const std::string text = rows[i].at("text").get<std::string>();
        CAPTURE(text);
        const auto ids = rows[i].at("ids").get<std::vector<int32_t>>();
        const attn::Encoding e = tok.encode(text);
        CHECK(e.ids == ids);
        CHECK(e.tokens == rows[i].at("tokens").get<std::vector<std::string>>());
        const auto T = static_cast<int64_t>(ids.size());
        const Tensor h = ref.to_float("hidden." + std::to_string(i), {T, 64});
        const attn::BertOutput out = m.forward({ids});  // the reference backend, weights recorded
        const double dh = rel_diff(out.hidden.ptr(), h.ptr(), h.data.size());
        CHECK(dh < 1e-4);
        worst_h = std::max(worst_h, dh);
        REQUIRE(out.attentions.size() == 2);
        for (int64_t l = 0; l < 2; ++l) {
            const Tensor a = ref.to_float("attention." + std::to_string(i) + "." + std::to_string(l), {4, T, T});
            const double da = abs_diff(out.attentions[static_cast<size_t>(l)].ptr(), a.ptr(), a.data.size());
            CHECK(da < 1e-5);
            worst_a = std::max(worst_a, da);
        }
        // the fast path (flash attention, the packed GEMM where the CPU has it) agrees too
        attn::BertOptions fast;
        fast.record_attention = false;
        const attn::BertOutput f = m.forward({ids}, fast);
        const double df = rel_diff(f.hidden.ptr(), h.ptr(), h.data.size());
        CHECK(df < 1e-4);
        worst_fast = std::max(worst_fast, df);
    }
    MESSAGE("bert-tiny, " << rows.size() << " texts: hidden state within " << worst_h << " relative (fast path "
                          << worst_fast << "), attention within " << worst_a << " absolute");
}

TEST_CASE("bert config: casing, pooling and normalisation come from the folder") {
    if (!fixture_or_skip()) return;
    // cased: accents and case kept; uncased (HF's default without tokenizer_config.json): lowered and stripped
    const std::string d = copy_tiny("bert-casing");
    auto tokens = [&](const std::string& text) {
        const auto files = attn::locate_model(d);
        return attn::load_tokenizer(files, attn::read_bert_config(files)).encode(text).tokens;
    };
    CHECK(tokens("The Café") == std::vector<std::string>{"[CLS]", "The", "Café", "[SEP]"});
    fs::remove(d + "/tokenizer_config.json");
    CHECK(tokens("The Café") == std::vector<std::string>{"[CLS]", "the", "c", "##a", "##f", "##e", "[SEP]"});
    write(d + "/tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": true})");
    CHECK(tokens("The Café") == std::vector<std::string>{"[CLS]", "The", "C", "##a", "##f", "##e", "[SEP]"});
    // find_word normalises the word as the tokenizer did: "The" is found in a cased model, "the" is another word
    {
        write(d + "/tokenizer_config.json", R"({"do_lower_case": false})");
        const auto files = attn::locate_model(d);
        const auto enc = attn::load_tokenizer(files, attn::read_bert_config(files)).encode("The cat and the mat");
        CHECK(attn::find_word(enc, "The", 1) == std::vector<int64_t>{1});
        CHECK(attn::find_word(enc, "the", 1) == std::vector<int64_t>{4});
    }
    // pooling: the mean (default) or [CLS]; normalised unless modules.json lists no Normalize
    const std::vector<int32_t> ids = {2, 5, 6, 7, 3};
    auto sentence = [&] {
        const auto files = attn::locate_model(d);
        const BertModel m = BertModel::load(files);
        attn::BertOptions o;
        o.record_attention = false;
        const auto out = m.forward({ids}, o);
        return std::make_pair(out.sentence, out.hidden);
    };
    auto norm = [](const float* v) {
        double s = 0;
        for (int k = 0; k < 64; ++k) s += static_cast<double>(v[k]) * v[k];
        return std::sqrt(s);
    };
    {
        const auto [s, h] = sentence();  // mean, normalised
        CHECK(norm(s.ptr()) == doctest::Approx(1.0).epsilon(1e-6));
    }
    write(d + "/pooling_config.json", R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})");
    write(d + "/modules.json", R"([{"type": "sentence_transformers.models.Transformer"},
                                   {"type": "sentence_transformers.models.Pooling"}])");
    {
        const auto [s, h] = sentence();  // [CLS], not normalised: exactly row 0 of the hidden state
        CHECK(std::equal(s.data.begin(), s.data.end(), h.data.begin()));
        CHECK(norm(s.ptr()) > 1.5);  // LayerNorm output: about sqrt(64) times the gamma scale, far from 1
    }
    fs::create_directories(d + "/1_Pooling");
    write(d + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true})");  // wins over pooling_config.json
    {
        const auto [s, h] = sentence();
        double mean0 = 0;
        for (int t = 0; t < 5; ++t) mean0 += h.data[static_cast<size_t>(t * 64)];
        CHECK(s.data[0] == doctest::Approx(mean0 / 5).epsilon(1e-6));
    }
}

TEST_CASE("bert config: what the encoder does not implement is refused by name, in one line, exit 2 from the command") {
    if (!fixture_or_skip()) return;
    using P = nlohmann::json::json_pointer;
    struct Case {
        const char* file;
        const char* at;
        nlohmann::json value;
        const char* needle;
    };
    const Case cases[] = {
        {"config.json", "/hidden_act", "relu",
         "config.json: \"hidden_act\" \"relu\" is not one attn implements (only \"gelu\""},
        {"config.json", "/hidden_act", "gelu_new", "\"hidden_act\" \"gelu_new\" is not one attn implements"},
        {"config.json", "/position_embedding_type", "relative_key",
         "\"position_embedding_type\" \"relative_key\" is not one attn implements (only \"absolute\")"},
        {"config.json", "/model_type", "roberta", "config.json: model_type is \"roberta\", not \"bert\""},
        {"config.json", "/is_decoder", true, "\"is_decoder\" is true; attn runs BERT as an encoder only"},
        {"config.json", "/add_cross_attention", true, "\"add_cross_attention\" is true"},
        {"config.json", "/hidden_size", 66, "hidden_size 66 is not divisible by 4 heads"},
        {"config.json", "/intermediate_size", 128, "has shape [96, 64], expected [128, 64]"},
        {"config.json", "/vocab_size", 301, "vocab.txt: has 300 tokens but"},
        {"tokenizer_config.json", "/do_lower_case", "yes",
         "tokenizer_config.json: \"do_lower_case\" must be true, false or null"},
        {"tokenizer_config.json", "/tokenize_chinese_chars", false, "\"tokenize_chinese_chars\" is false"},
        {"pooling_config.json", "/pooling_mode_max_tokens", true,
         "pooling_config.json: the pooling is pooling_mode_max_tokens; attn implements one of"},
    };
    for (const Case& k : cases) {
        CAPTURE(k.needle);
        const std::string d = copy_tiny("bert-refuse");
        if (std::string(k.file) == "pooling_config.json") write(d + "/pooling_config.json", "{}");
        edit_json(d + "/" + k.file, P(k.at), k.value);
        const std::string msg = config_error(d);
        CHECK_MESSAGE(msg.find(k.needle) != std::string::npos, "message: " << msg);
        CHECK(msg.find('\n') == std::string::npos);
        const auto r = attn::test::run_attn("model attention --model '" + d + "' --text hi");
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find(k.needle) != std::string::npos, r.out);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    // a folder that works: the command runs on it, named by its folder
    const std::string ok = copy_tiny("bert-ok");
    const auto r = attn::test::run_attn("model attention --model '" + ok + "' --text 'The cat sat'");
    CHECK_MESSAGE(r.code == 0, r.out);
}

TEST_CASE("bert config: odd sizes (no multiple of 32 anywhere) run the same on every path") {
    // hidden 36 = 3 heads of 12, intermediate 50, 40 tokens of vocabulary: every GEMM has
    // column and k tails, the heads are narrower than a vector register
    attn::BertConfig c;
    c.vocab_size = 40;
    c.hidden = 36;
    c.heads = 3;
    c.layers = 3;
    c.intermediate = 50;
    c.max_position = 24;
    c.max_len = 24;
    const BertModel m = BertModel::random(c, 7);
    const std::vector<std::vector<int32_t>> ids = {{2, 5, 9, 11, 3}, {2, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 3}};
    attn::BertOptions ref;  // reference attention, Eigen's GEMM
    ref.gemm = attn::GemmChoice::Eigen;
    const attn::BertOutput a = m.forward(ids, ref, 0);
    for (const int threads : {1, 3}) {
        attn::BertOptions fast;  // flash attention, the packed GEMM where the CPU has it
        fast.record_attention = false;
        fast.threads = threads;
        const attn::BertOutput f = m.forward(ids, fast, 0);
        CAPTURE(threads);
        CAPTURE(f.gemm_path);
        // float32 sums in another order: a few ulps of values of order 1
        CHECK(rel_diff(f.hidden.ptr(), a.hidden.ptr(), a.hidden.data.size()) < 1e-5);
        CHECK(rel_diff(f.sentence.ptr(), a.sentence.ptr(), a.sentence.data.size()) < 1e-5);
    }
    REQUIRE(a.attentions.size() == 3);
    CHECK(a.attentions[0].shape == attn::Shape{2, 3, 12, 12});
}
