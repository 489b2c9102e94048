// Tests of the WordPiece tokenizer: hand-checked basics on a toy vocabulary,
// then id-for-id parity with HF tokenizers on the fixture sentences
// (tests/fixtures/model/tokenizer.json, made by scripts/make-model-fixtures.py).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/model/tokenizer.hpp"
#include "test_util.hpp"

using attn::WordPieceTokenizer;

namespace {

const std::string kModelDir = std::string(ATTN_SOURCE_DIR) + "/data/models/all-MiniLM-L6-v2";

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

WordPieceTokenizer toy() {
    return WordPieceTokenizer({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "the", "cat", ",", "!",
                               "##s", "e", "cafe", "中"},
                              8);
}

}  // namespace

TEST_CASE("tokenizer: basic tokenisation lower-cases, strips accents, splits punctuation and CJK") {
    using V = std::vector<std::string>;
    CHECK(attn::bert_basic_tokenize("Hello, World!") == V{"hello", ",", "world", "!"});
    CHECK(attn::bert_basic_tokenize("Café NAÏVE Ångström") == V{"cafe", "naive", "angstrom"});
    CHECK(attn::bert_basic_tokenize("didn't") == V{"didn", "'", "t"});
    CHECK(attn::bert_basic_tokenize("我爱ab中") == V{"我", "爱", "ab", "中"});
    CHECK(attn::bert_basic_tokenize(" \t\n ") == V{});
    CHECK(attn::bert_basic_tokenize("a\x01" "b\xEF\xBF\xBD" "c") == V{"abc"});  // control and U+FFFD dropped
    CHECK(attn::bert_basic_tokenize("$5+3") == V{"$", "5", "+", "3"});          // ASCII symbols count as punctuation
    CHECK(attn::bert_basic_tokenize("İ") == V{"i"});  // NFD I + U+0307, the mark is stripped, then lower-cased
    // Hangul syllables decompose to jamo (NFD), which are letters and stay
    CHECK(attn::bert_basic_tokenize("한") == V{"\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"});
}

TEST_CASE("tokenizer: WordPiece is greedy longest-match-first with ## continuations") {
    const WordPieceTokenizer t = toy();
    using V = std::vector<std::string>;
    CHECK(t.wordpiece("unaffable") == V{"un", "##aff", "##able"});
    CHECK(t.wordpiece("cats") == V{"cat", "##s"});
    CHECK(t.wordpiece("catz") == V{"[UNK]"});  // one uncovered part makes the whole word [UNK]
    CHECK(t.wordpiece(std::string(101, 'e')) == V{"[UNK]"});  // over 100 characters
    const attn::Encoding e = t.encode("The cats, unaffable!");
    // max_len 8: 10 tokens are cut to [CLS] + 6 pieces + [SEP]
    CHECK(e.truncated);
    CHECK(e.full_length == 10);
    CHECK(e.tokens == V{"[CLS]", "the", "cat", "##s", ",", "un", "##aff", "[SEP]"});
    CHECK(e.ids == std::vector<int32_t>{2, 7, 8, 11, 9, 4, 5, 3});
    CHECK(e.word_of == std::vector<int32_t>{-1, 0, 1, 1, 2, 3, 3, -1});
    const attn::Encoding empty = t.encode("");
    CHECK(empty.tokens == V{"[CLS]", "[SEP]"});
    CHECK_FALSE(empty.truncated);
}

TEST_CASE("tokenizer: special tokens typed in the text stay whole, as in HF, and blank text is [CLS] [SEP]") {
    using V = std::vector<std::string>;
    const WordPieceTokenizer t = toy();
    const attn::Encoding e = t.encode("the[SEP] cat[PAD]");
    CHECK(e.tokens == V{"[CLS]", "the", "[SEP]", "cat", "[PAD]", "[SEP]"});
    CHECK(e.ids == std::vector<int32_t>{2, 7, 3, 8, 0, 3});
    CHECK(e.word_of == std::vector<int32_t>{-1, 0, 1, 2, 3, -1});
    // Only the exact spelling, and only tokens the vocabulary has: toy() has no [MASK].
    // ("[", "]" and "sep" are not in toy(): each is [UNK].)
    CHECK(t.encode("[sep]").tokens == V{"[CLS]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"});
    CHECK(t.encode("[MASK]").tokens == V{"[CLS]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"});
    CHECK(t.encode("cat[UNK]").tokens == V{"[CLS]", "cat", "[UNK]", "[SEP]"});
    for (const char* blank : {"", " ", "\t\n ", "\xff\xfe"}) {
        CAPTURE(blank);
        CHECK(t.encode(blank).tokens == V{"[CLS]", "[SEP]"});
    }
}

TEST_CASE("tokenizer: a vocabulary without the special tokens is an InputError") {
    CHECK_THROWS_WITH_AS(WordPieceTokenizer({"[PAD]", "a"}, 8, "v.txt"),
                         doctest::Contains("v.txt: the vocabulary has no"), attn::InputError);
    CHECK_THROWS_AS(WordPieceTokenizer::load("/nonexistent/vocab.txt", 8), attn::InputError);
}

TEST_CASE("tokenizer: ids identical to HF tokenizers on the fixture sentences (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/tokenizer.json");
    const WordPieceTokenizer t = WordPieceTokenizer::load(kModelDir + "/vocab.txt", fx["max_len"].get<int64_t>());
    int checked = 0, truncated = 0;
    for (const auto& c : fx["cases"]) {
        const std::string text = c["text"].get<std::string>();
        CAPTURE(text);
        const attn::Encoding e = t.encode(text);
        CHECK(e.tokens == c["tokens"].get<std::vector<std::string>>());
        CHECK(e.ids == c["ids"].get<std::vector<int32_t>>());
        truncated += e.truncated ? 1 : 0;
        ++checked;
    }
    CHECK(checked >= 20);
    CHECK(truncated == 1);  // the long case really exercised truncation
}
