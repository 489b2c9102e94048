// Tests of tokenizer.json, Hugging Face's fast-tokenizer file, as a source of the byte-level BPE
// tokenizer: the fixture file (written by HF tokenizers from the tiny GPT-2's vocab.json +
// merges.txt: scripts/make-tokenizer-json-fixture.py) gives the same ids as that pair and as
// transformers on the 240 texts of tokens.json, with merges written either way; a small file
// checked by hand; every refusal; and GPT-2 folders that hold tokenizer.json, through the
// library and through `attn model next`.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bpe.hpp"
#include "attn/model/gpt2.hpp"
#include "test_util.hpp"

using attn::BpeTokenizer;
namespace fs = std::filesystem;

namespace {

const std::string kTiny = attn::test::source_path("tests/fixtures/gpt2-tiny");

nlohmann::json fixture_json() {
    return nlohmann::json::parse(attn::read_file(kTiny + "/tokenizer.json"));
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A message that names `needle`, on one line.
void expect_refusal(const nlohmann::json& j, const std::string& needle) {
    try {
        (void)BpeTokenizer::parse_tokenizer_json(j.dump(), "T.json");
        FAIL("accepted, expected: " << needle);
    } catch (const attn::InputError& e) {
        const std::string msg = e.what();
        CHECK_MESSAGE(msg.find(needle) != std::string::npos, "message: " << msg << "\nwanted: " << needle);
        CHECK(msg.rfind("T.json", 0) == 0);
        CHECK(msg.find('\n') == std::string::npos);
    }
}

// A GPT-2 folder from the fixture: config.json and the weights, plus the given tokenizer files.
std::string folder(const std::string& tag, std::initializer_list<const char*> tokenizer_files) {
    const std::string d = attn::test::temp_dir(tag);
    for (const char* f : {"config.json", "model.safetensors"})
        fs::copy_file(kTiny + "/" + f, d + "/" + f, fs::copy_options::overwrite_existing);
    for (const char* f : tokenizer_files)
        fs::copy_file(kTiny + "/" + f, d + "/" + f, fs::copy_options::overwrite_existing);
    return d;
}

// A tokenizer.json small enough to check by hand:
// the byte symbols a (0), b (1), Ġ (2); merges a b -> ab (3), Ġ ab -> Ġab (4);
// <|endoftext|> is not in model.vocab, only added, with the next id (5)
const char* const kHand = R"({
      "version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [{"id": 5, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
                        "rstrip": false, "normalized": true, "special": true}],
      "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
      "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
      "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
                "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
                "vocab": {"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4},
                "merges": ["a b", ["Ġ", "ab"]]}
    })";

std::string load_error(const std::string& dir) {
    try {
        const auto files = attn::locate_gpt2(dir);
        (void)attn::load_gpt2_tokenizer(files, attn::read_gpt2_config(files));
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("tokenizer.json: the fixture gives transformers' ids on 240 texts, merges as pairs or as strings") {
    const nlohmann::json j = fixture_json();
    REQUIRE(j.at("model").at("merges").at(0).is_array());  // as tokenizers >= 0.20 writes them
    nlohmann::json legacy = j;                              // as older versions wrote them: "a b"
    for (auto& m : legacy["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
    const BpeTokenizer pairs = BpeTokenizer::load_tokenizer_json(kTiny + "/tokenizer.json");
    const BpeTokenizer strings = BpeTokenizer::parse_tokenizer_json(legacy.dump(), "legacy tokenizer.json");
    const BpeTokenizer files = BpeTokenizer::load(kTiny + "/vocab.json", kTiny + "/merges.txt");
    CHECK(pairs.vocab_size() == files.vocab_size());
    CHECK(pairs.merges() == files.merges());
    CHECK(pairs.merges() == 250);
    CHECK(pairs.eos_id() == files.eos_id());
    const nlohmann::json fx = attn::parse_json_relaxed(attn::read_file(kTiny + "/tokens.json"), "tokens.json");
    const auto& rows = fx.at("texts");
    REQUIRE(rows.size() >= 200);
    int same = 0;
    for (const auto& row : rows) {
        const std::string text = row.at("text").get<std::string>();
        const auto want = row.at("ids").get<std::vector<int32_t>>();
        const auto got = pairs.encode(text);
        CHECK_MESSAGE(got.ids == want, "text: " << nlohmann::json(text).dump());
        CHECK(strings.encode(text).ids == want);
        CHECK(files.encode(text).tokens == got.tokens);
        CHECK(pairs.decode(got.ids) == text);
        same += got.ids == want;
    }
    MESSAGE("tokenizer.json: identical ids on " << same << " of " << rows.size() << " texts");
    CHECK(same == static_cast<int>(rows.size()));
}

TEST_CASE("tokenizer.json: a small file checked by hand, <|endoftext|> added after the vocabulary") {
    const BpeTokenizer tok = BpeTokenizer::parse_tokenizer_json(kHand, "hand.json");
    CHECK(tok.vocab_size() == 6);
    CHECK(tok.merges() == 2);
    CHECK(tok.eos_id() == 5);
    // "ab ab<|endoftext|>ba": words "ab", " ab" | "ba": [ab] [Ġab] <eot> [b] [a]
    const auto e = tok.encode("ab ab<|endoftext|>ba");
    CHECK(e.ids == std::vector<int32_t>{3, 4, 5, 1, 0});
    CHECK(e.tokens == std::vector<std::string>{"ab", "Ġab", "<|endoftext|>", "b", "a"});
    CHECK(tok.decode(e.ids) == "ab ab<|endoftext|>ba");
    CHECK_THROWS_AS(tok.encode("abc"), attn::InputError);  // 'c' has no byte symbol here
}

TEST_CASE("tokenizer.json: what attn's tokenizer does not implement is refused by field and rule") {
    const nlohmann::json base = fixture_json();
    auto with = [&](const nlohmann::json::json_pointer& at, const nlohmann::json& value) {
        nlohmann::json j = base;
        j[at] = value;
        return j;
    };
    using P = nlohmann::json::json_pointer;
    expect_refusal(with(P("/model/type"), "WordPiece"), "model.type is \"WordPiece\"; attn reads only \"BPE\"");
    expect_refusal(with(P("/model/type"), nullptr), "model.type is missing");
    expect_refusal(with(P("/model/byte_fallback"), true), "model.byte_fallback is true, which attn's BPE does not");
    expect_refusal(with(P("/model/dropout"), 0.1), "model.dropout is 0.1");
    expect_refusal(with(P("/model/ignore_merges"), true), "model.ignore_merges is true");
    expect_refusal(with(P("/model/continuing_subword_prefix"), "##"), "model.continuing_subword_prefix is \"##\"");
    expect_refusal(with(P("/model/end_of_word_suffix"), "</w>"), "model.end_of_word_suffix");
    expect_refusal(with(P("/model/future_option"), 3), "model.future_option is 3, a setting attn's BPE does not know");
    expect_refusal(with(P("/normalizer"), {{"type", "NFC"}}), "the normalizer \"NFC\" is not one attn implements");
    expect_refusal(with(P("/pre_tokenizer"), {{"type", "Whitespace"}}), "the pre_tokenizer \"Whitespace\" is not one");
    expect_refusal(with(P("/pre_tokenizer"), nullptr), "the pre_tokenizer is missing or null");
    expect_refusal(with(P("/pre_tokenizer/add_prefix_space"), true), "pre_tokenizer.add_prefix_space is true");
    expect_refusal(with(P("/pre_tokenizer/use_regex"), false), "pre_tokenizer.use_regex is not true");
    expect_refusal(with(P("/pre_tokenizer"), {{"type", "Sequence"},
                                              {"pretokenizers", {{{"type", "Split"}}, {{"type", "ByteLevel"}}}}}),
                   "the pre_tokenizer \"Sequence\" is not one");
    expect_refusal(with(P("/post_processor"), {{"type", "BertProcessing"}}),
                   "the post_processor \"BertProcessing\" adds");
    expect_refusal(with(P("/post_processor/single/0"), {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}}),
                   "the post_processor");
    expect_refusal(with(P("/decoder"), {{"type", "WordPiece"}}), "the decoder \"WordPiece\" is not one");
    expect_refusal(with(P("/truncation"), {{"max_length", 8}}), "\"truncation\" is set");
    expect_refusal(with(P("/padding"), {{"strategy", "BatchLongest"}}), "\"padding\" is set");
    // unk_token: harmless with every byte symbol (the fixture), refused without them (the hand file)
    CHECK_NOTHROW(BpeTokenizer::parse_tokenizer_json(with(P("/model/unk_token"), "<|endoftext|>").dump()));
    nlohmann::json hand = nlohmann::json::parse(kHand);
    hand["model"]["unk_token"] = "a";
    expect_refusal(hand, "model.unk_token is set and the vocabulary lacks 253 of the 256 byte symbols");
    expect_refusal(with(P("/added_tokens/0/content"), "<pad>"), "added_tokens[0]: '<pad>' is not one attn implements");
    expect_refusal(with(P("/added_tokens/0/lstrip"), true), "added_tokens[0]: \"lstrip\" is true");
    expect_refusal(with(P("/added_tokens/0/id"), 3),
                   "added_tokens[0]: <|endoftext|> has id 3 here but 506 in model.vocab");
    expect_refusal(with(P("/added_tokens/0/id"), "506"),
                   "added_tokens[0]: needs a string \"content\" and an integer \"id\"");
    expect_refusal(with(P("/added_tokens"), nlohmann::json::array()),
                   "<|endoftext|> is in model.vocab but not in added_tokens");
    expect_refusal(with(P("/model/merges/3"), "Ġ  t"), "T.json: model.merges[3]: 'Ġ  t' is not two tokens");
    expect_refusal(with(P("/model/merges/3"), {"Ġ"}), "T.json: model.merges[3]: is neither \"a b\" nor a pair");
    expect_refusal(with(P("/model/merges/3"), {"q", "z"}),
                   "T.json: model.merges: merge 4 ('q z'): the merged token 'qz'");
    expect_refusal(with(P("/model/merges/1"), base["model"]["merges"][0]),
                   "model.merges: merge 2 ('Ġ t'): appears twice");
    expect_refusal(with(P("/model/merges"), "Ġ t"), "model.merges is not a list");
    expect_refusal(with(P("/model/vocab/Ġt"), 9999), "T.json: token 'Ġt' has id 9999, outside 0..506");
    expect_refusal(with(P("/model"), nullptr), "has no \"model\" object");
    expect_refusal(nlohmann::json::array(), "not a JSON object");
    // still accepted: dropout 0, no post_processor or decoder, a Sequence of one ByteLevel
    CHECK_NOTHROW(BpeTokenizer::parse_tokenizer_json(with(P("/model/dropout"), 0.0).dump()));
    CHECK_NOTHROW(BpeTokenizer::parse_tokenizer_json(with(P("/post_processor"), nullptr).dump()));
    CHECK_NOTHROW(BpeTokenizer::parse_tokenizer_json(with(P("/decoder"), nullptr).dump()));
    CHECK_NOTHROW(BpeTokenizer::parse_tokenizer_json(
        with(P("/pre_tokenizer"), {{"type", "Sequence"}, {"pretokenizers", {base["pre_tokenizer"]}}}).dump()));
    try {
        (void)BpeTokenizer::parse_tokenizer_json("{\"model\": ", "T.json");
        FAIL("a truncated file was accepted");
    } catch (const attn::InputError& e) {
        CHECK(std::string(e.what()).rfind("T.json", 0) == 0);
    }
}

TEST_CASE(
    "tokenizer.json: a GPT-2 folder with only tokenizer.json loads, vocab.json + merges.txt win when both are there") {
    const std::string only = folder("gpt2-tj", {"tokenizer.json"});
    const attn::Gpt2Files f = attn::locate_gpt2(only);
    CHECK(f.tokenizer_json == only + "/tokenizer.json");
    CHECK(f.vocab == f.tokenizer_json);
    CHECK(f.merges.empty());
    const BpeTokenizer tok = attn::load_gpt2_tokenizer(f, attn::read_gpt2_config(f));
    CHECK(tok.vocab_size() == 507);
    // both: the pair is read, so a broken tokenizer.json beside it is not even opened
    const std::string both = folder("gpt2-both", {"vocab.json", "merges.txt"});
    write(both + "/tokenizer.json", "{ broken");
    const attn::Gpt2Files fb = attn::locate_gpt2(both);
    CHECK(fb.tokenizer_json.empty());
    CHECK(fb.merges == both + "/merges.txt");
    CHECK(attn::load_gpt2_tokenizer(fb, attn::read_gpt2_config(fb)).vocab_size() == 507);
    // half a pair: tokenizer.json is read
    const std::string half = folder("gpt2-half", {"vocab.json", "tokenizer.json"});
    CHECK(attn::locate_gpt2(half).tokenizer_json == half + "/tokenizer.json");
    // no tokenizer at all, or half a pair and nothing else
    CHECK(load_error(folder("gpt2-none", {}))
              .find("the tokenizer (vocab.json + merges.txt, or tokenizer.json) is missing") != std::string::npos);
    CHECK(load_error(folder("gpt2-novocab", {"merges.txt"})).find("vocab.json is missing") != std::string::npos);
    // more tokens than the embedding has rows
    const std::string big = folder("gpt2-tj-big", {});
    nlohmann::json j = fixture_json();
    j["added_tokens"][0]["id"] = 508;
    j["model"]["vocab"].erase("<|endoftext|>");
    j["model"]["vocab"]["zz-extra"] = 506;
    j["model"]["vocab"]["zz-extra2"] = 507;
    write(big + "/tokenizer.json", j.dump());
    CHECK(load_error(big).find("tokenizer.json: has 509 tokens but") != std::string::npos);
    // an ordinary token past the embedding is refused too (only an added <|endoftext|> may be)
    j["added_tokens"][0]["id"] = 506;
    j["model"]["vocab"].erase("zz-extra2");
    j["model"]["vocab"].erase("zz-extra");
    j["model"]["vocab"]["<|endoftext|>"] = 506;
    j["model"]["vocab"]["zz-extra"] = 507;
    write(big + "/tokenizer.json", j.dump());
    CHECK(load_error(big).find("tokenizer.json: has 508 tokens but") != std::string::npos);
}

TEST_CASE("tokenizer.json: attn model next reads it, and refuses a bad one in one line with exit 2") {
    const std::string only = folder("gpt2-tj-cli", {"tokenizer.json"});
    const std::string pair = folder("gpt2-pair-cli", {"vocab.json", "merges.txt"});
    const std::string text = " --text 'The king<|endoftext|> 中文 😀' --top 3";
    const auto a = attn::test::run_attn("model next --model '" + only + "'" + text);
    const auto b = attn::test::run_attn("model next --model '" + pair + "'" + text);
    CHECK_MESSAGE(a.code == 0, a.out);
    // the same tokens, the same probabilities (after the first line, which names the folder)
    CHECK(a.out.substr(a.out.find('\n')) == b.out.substr(b.out.find('\n')));
    const nlohmann::json base = fixture_json();
    const std::pair<std::string, std::string> cases[] = {
        {"{ broken", "tokenizer.json"},
        {nlohmann::json(base).dump().substr(0, 3000), "tokenizer.json"},
        {[&] {
             auto j = base;
             j["model"]["type"] = "Unigram";
             return j.dump();
         }(),
         "model.type is \"Unigram\""},
        {[&] {
             auto j = base;
             j["model"]["byte_fallback"] = true;
             return j.dump();
         }(),
         "model.byte_fallback is true"},
        {[&] {
             auto j = base;
             j["normalizer"] = {{"type", "Lowercase"}};
             return j.dump();
         }(),
         "the normalizer"},
        {[&] {
             auto j = base;
             j["model"]["merges"][0] = "Ġt";
             return j.dump();
         }(),
         "model.merges[0]: 'Ġt' is not two tokens"},
        {[&] {
             auto j = base;
             j["added_tokens"][0]["content"] = "<s>";
             return j.dump();
         }(),
         "'<s>' is not one attn implements"},
    };
    for (const auto& [content, needle] : cases) {
        CAPTURE(needle);
        write(only + "/tokenizer.json", content);
        const auto r = attn::test::run_attn("model next --model '" + only + "' --text hi");
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find("--model: " + only + "/tokenizer.json") != std::string::npos, r.out);
        CHECK_MESSAGE(r.out.find(needle) != std::string::npos, r.out);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    fs::remove(only + "/tokenizer.json");
    const auto r = attn::test::run_attn("model next --model '" + only + "' --text hi");
    CHECK(r.code == 2);
    CHECK_MESSAGE(
        r.out.find("the tokenizer (vocab.json + merges.txt, or tokenizer.json) is missing") != std::string::npos,
        r.out);
}

TEST_CASE("GPT-2 folders: every kind of bad folder is one line and exit 2 from attn model next") {
    struct Case {
        std::string what, needle;
        std::function<void(const std::string&)> breakit;
    };
    auto edit = [](const std::string& path, const std::string& from, const std::string& to) {
        std::string s = attn::read_file(path);
        const size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        s.replace(at, from.size(), to);
        write(path, s);
    };
    const std::vector<Case> cases = {
        {"missing config.json", "config.json is missing", [](const std::string& d) { fs::remove(d + "/config.json"); }},
        {"missing weights", "model.safetensors is missing",
         [](const std::string& d) { fs::remove(d + "/model.safetensors"); }},
        {"missing tokenizer", "the tokenizer (vocab.json + merges.txt, or tokenizer.json) is missing",
         [](const std::string& d) { fs::remove(d + "/tokenizer.json"); }},
        {"wrong shapes", "tensor 'transformer.h.0.mlp.c_fc.weight' has shape [32, 128], expected [32, 64]",
         [&](const std::string& d) { edit(d + "/config.json", "\"n_inner\": null", "\"n_inner\": 64"); }},
        {"unknown architecture", "config.json: model_type is \"llama\", not \"gpt2\"",
         [&](const std::string& d) {
             edit(d + "/config.json", "\"model_type\": \"gpt2\"", "\"model_type\": \"llama\"");
         }},
        {"truncated safetensors", "model.safetensors: ",
         [](const std::string& d) {
             const std::string b = attn::read_file(d + "/model.safetensors");
             write(d + "/model.safetensors", b.substr(0, b.size() / 2));
         }},
        {"bad merges", "tokenizer.json: model.merges: merge 1 ('Ġ zz'): 'zz' is not in",
         [&](const std::string& d) { edit(d + "/tokenizer.json", "\"Ġ\",\n        \"t\"", "\"Ġ\",\n        \"zz\""); }},
        {"bad tokenizer.json", "tokenizer.json: the pre_tokenizer \"Metaspace\" is not one attn implements",
         [&](const std::string& d) {
             edit(d + "/tokenizer.json", "\"type\": \"ByteLevel\",\n    \"add_prefix_space\": false",
                  "\"type\": \"Metaspace\",\n    \"add_prefix_space\": false");
         }},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        const std::string d = folder("gpt2-bad-cli", {"tokenizer.json"});
        c.breakit(d);
        const auto r = attn::test::run_attn("model next --model '" + d + "' --text hi");
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find("attn: error: --model: ") == 0, r.out);
        CHECK_MESSAGE(r.out.find(c.needle) != std::string::npos, r.out);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
}

TEST_CASE("tokenizer.json: <|endoftext|> added past a vocabulary without it (as transformers writes it) loads") {
    // the shipped character model has 67 tokens and no <|endoftext|>; GPT2TokenizerFast saves
    // its tokenizer.json with <|endoftext|> added as id 67, one past the embedding
    const std::string src = attn::test::source_path("data/decoders/macbeth-char");
    std::error_code ec;
    if (!fs::is_regular_file(src + "/vocab.json", ec)) {
        attn::test::skip("no " + src + " (the shipped decoder)");
        return;
    }
    const nlohmann::json vocab = nlohmann::json::parse(attn::read_file(src + "/vocab.json"));
    REQUIRE(vocab.size() == 67);
    REQUIRE(!vocab.contains("<|endoftext|>"));
    nlohmann::json merges = nlohmann::json::array();
    std::istringstream lines(attn::read_file(src + "/merges.txt"));
    for (std::string line; std::getline(lines, line);)
        if (!line.empty() && line.rfind("#version", 0) != 0) merges.push_back(line);
    nlohmann::json j = fixture_json();
    j["model"]["vocab"] = vocab;
    j["model"]["merges"] = merges;
    j["added_tokens"][0]["id"] = 67;
    const std::string d = attn::test::temp_dir("gpt2-eos-past");
    for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(src + "/" + f, d + "/" + f);
    write(d + "/tokenizer.json", j.dump());
    const auto files = attn::locate_gpt2(d);
    const BpeTokenizer tok = attn::load_gpt2_tokenizer(files, attn::read_gpt2_config(files));
    CHECK(tok.vocab_size() == 68);
    CHECK(tok.eos_id() == 67);
    const auto a = attn::test::run_attn("model next --model '" + d + "' --text 'MACBETH. Is this' --top 3");
    const auto b = attn::test::run_attn("model next --model '" + src + "' --text 'MACBETH. Is this' --top 3");
    CHECK_MESSAGE(a.code == 0, a.out);
    CHECK(a.out.substr(a.out.find('\n')) == b.out.substr(b.out.find('\n')));
    const auto r = attn::test::run_attn("model next --model '" + d + "' --text 'MACBETH<|endoftext|>'");
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find("token id 67 is outside the vocabulary") != std::string::npos, r.out);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}
