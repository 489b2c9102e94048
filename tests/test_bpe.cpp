// Tests of the byte-level BPE tokenizer: the byte map, the pre-split pattern and the merges
// checked by hand on small cases, the readers' refusals, then id-for-id parity with
// transformers' GPT2Tokenizer on 240 texts (tests/fixtures/gpt2-tiny/tokens.json, made by
// scripts/make-gpt2-fixtures.py with a vocabulary of 507 tokens trained there).
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bpe.hpp"
#include "test_util.hpp"

using attn::BpeTokenizer;
using V = std::vector<std::string>;

namespace {

const std::string kTiny = attn::test::source_path("tests/fixtures/gpt2-tiny");

// A vocabulary of the 256 byte symbols (ids 0..255 in byte order), then `extra`, then
// <|endoftext|>, as JSON.
std::string byte_vocab(const V& extra) {
    nlohmann::json j = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
        std::string s;
        attn::utf8_append(s, attn::bpe_byte_to_unicode(static_cast<uint8_t>(b)));
        j[s] = b;
    }
    int id = 256;
    for (const std::string& t : extra) j[t] = id++;
    j[std::string(attn::kEndOfText)] = id;
    return j.dump();
}

}  // namespace

TEST_CASE("bpe: bytes_to_unicode keeps printable Latin-1 and moves the other 68 bytes to U+0100..U+0143") {
    CHECK(attn::bpe_byte_to_unicode('A') == U'A');
    CHECK(attn::bpe_byte_to_unicode('!') == U'!');
    CHECK(attn::bpe_byte_to_unicode(0xE9) == U'é');
    CHECK(attn::bpe_byte_to_unicode(0x00) == 0x100);
    CHECK(attn::bpe_byte_to_unicode(' ') == U'Ġ');   // 0x20, the 33rd non-printable byte
    CHECK(attn::bpe_byte_to_unicode('\n') == U'Ċ');  // 0x0A
    CHECK(attn::bpe_byte_to_unicode(0xAD) == 0x143);  // the soft hyphen, the last one
    std::set<char32_t> seen;
    for (int b = 0; b < 256; ++b) {
        const char32_t c = attn::bpe_byte_to_unicode(static_cast<uint8_t>(b));
        seen.insert(c);
        CHECK(attn::bpe_unicode_to_byte(c) == b);
    }
    CHECK(seen.size() == 256);
    CHECK(attn::bpe_unicode_to_byte(U' ') == -1);
    CHECK(attn::bpe_unicode_to_byte(0x144) == -1);
}

TEST_CASE("bpe: the pre-split follows GPT-2's pattern, alternative by alternative") {
    CHECK(attn::bpe_pre_split("Hello world") == V{"Hello", " world"});
    // contractions are split off, lower case only; an upper-case one is letters after an apostrophe
    CHECK(attn::bpe_pre_split("I'm don't we'll") == V{"I", "'m", " don", "'t", " we", "'ll"});
    CHECK(attn::bpe_pre_split("DON'T") == V{"DON", "'", "T"});
    // letters, numbers and the rest are separate runs, each taking one leading space
    CHECK(attn::bpe_pre_split("abc123 456!? x") == V{"abc", "123", " 456", "!?", " x"});
    CHECK(attn::bpe_pre_split("中文 😀😀 é") == V{"中文", " 😀😀", " é"});
    // a whitespace run gives all but its last character to itself, the last to the next word
    CHECK(attn::bpe_pre_split("a   b") == V{"a", "  ", " b"});
    CHECK(attn::bpe_pre_split("a\n\nb") == V{"a", "\n", "\n", "b"});
    CHECK(attn::bpe_pre_split("a\t b") == V{"a", "\t", " b"});
    // at the end of the text the whole run is one word
    CHECK(attn::bpe_pre_split("a  \n") == V{"a", "  \n"});
    CHECK(attn::bpe_pre_split(" ") == V{" "});
    CHECK(attn::bpe_pre_split("").empty());
    // U+001F is not White_Space (Python's isspace would say it is): a symbol run
    CHECK(attn::bpe_pre_split("a\x1f b") == V{"a", "\x1f", " b"});
    // an invalid byte reads as U+FFFD, a symbol
    CHECK(attn::bpe_pre_split("a\xff") == V{"a", "\xEF\xBF\xBD"});
}

TEST_CASE("bpe: merges apply by rank, every occurrence, until none applies") {
    // "Ġ t" ranks before "h e", and "Ġt he" after both
    const std::string vocab = byte_vocab({"Ġt", "he", "Ġthe", "aa"});
    const BpeTokenizer tok = BpeTokenizer::parse(vocab, "#version: 0.2\nĠ t\nh e\nĠt he\na a\n");
    CHECK(tok.vocab_size() == 261);
    CHECK(tok.merges() == 4);
    CHECK(tok.bpe(" the") == V{"Ġthe"});
    CHECK(tok.bpe(" then") == V{"Ġthe", "n"});
    CHECK(tok.bpe("aaa") == V{"aa", "a"});  // left to right, no overlap
    CHECK(tok.bpe("aaaa") == V{"aa", "aa"});
    const auto enc = tok.encode("the the<|endoftext|>aaa");
    CHECK(enc.tokens == V{"t", "he", "Ġthe", "<|endoftext|>", "aa", "a"});
    CHECK(enc.ids == std::vector<int32_t>{'t', 257, 258, 260, 259, 'a'});
    CHECK(tok.decode(enc.ids) == "the the<|endoftext|>aaa");
    CHECK(tok.eos_id() == 260);
    CHECK(tok.max_token_bytes() == 13);  // "<|endoftext|>", the longest string
    CHECK(tok.token_text(258) == " the");
    CHECK(tok.token_text(0xE4) == "\xEF\xBF\xBD");  // one byte of a character: shown as U+FFFD
    CHECK_THROWS_AS(tok.token(261), attn::InputError);
}

// Hugging Face's tokenizers take a Python str: bytes that are not UTF-8 reach them through
// bytes.decode("utf-8", "replace"), one U+FFFD per maximal subpart. attn reads the bytes itself,
// and gives the ids of that same text (Unicode's examples; the decoded strings are Python's).
TEST_CASE("bpe: ill-formed UTF-8 gives the ids of Python's errors=replace decoding") {
    const BpeTokenizer tok = BpeTokenizer::parse(byte_vocab({"Ġt", "he"}), "#version: 0.2\nĠ t\nh e\n");
    const std::string R = "\xEF\xBF\xBD";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"a\xE4\xB8" "b", "a" + R + "b"},
        {"\x61\xC0\xAF\xE0\x80\xBF\xF0\x80\x80\xAF\x41", "a" + R + R + R + R + R + R + R + R + R + "A"},
        {"\x61\xED\xA0\x80\xED\xBF\xBF\x62", "a" + R + R + R + R + R + R + "b"},
        {"\x61\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42", "a" + R + R + R + R + R + "A" + R + R + "B"},
        {"\x61\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", "a" + R + R + R + R + "A"},
        {" the\xE4\xB8 he", " the" + R + " he"},
    };
    for (const auto& [bytes, decoded] : cases) {
        INFO(decoded);
        CHECK(tok.encode(bytes).ids == tok.encode(decoded).ids);
    }
    CHECK(tok.encode("a\xE4\xB8" "b").ids.size() == 5);  // a, the 3 bytes of one U+FFFD, b
}

TEST_CASE("bpe: bad vocabularies and merges are refused with the file and the rule") {
    const std::string vocab = byte_vocab({"Ġt"});
    auto refuse = [](const std::string& v, const std::string& m, const std::string& needle) {
        try {
            (void)BpeTokenizer::parse(v, m, "V.json", "M.txt");
            FAIL("accepted, expected: " << needle);
        } catch (const attn::InputError& e) {
            const std::string msg = e.what();
            CHECK_MESSAGE(msg.find(needle) != std::string::npos, msg);
            CHECK(msg.find('\n') == std::string::npos);
        }
    };
    refuse(vocab, "Ġ t\nĠ t\n", "M.txt: merge 2");                   // twice
    refuse(vocab, "Ġ x\n", "the merged token 'Ġx' is not in V.json");  // result missing
    refuse(vocab, "Ġt\n", "M.txt: line 1");                           // one token
    refuse(vocab, "Ġ  t\n", "M.txt: line 1");                         // two spaces
    refuse(vocab, "Ġ t\n\nĠ t\n", "M.txt: line 2: is empty");
    refuse(vocab, "Ġ t\nĠt zz\n", "'zz' is not in V.json");
    refuse("[1, 2]", "", "V.json: not a JSON object");
    refuse("{\"a\": 0, \"b\": 2}", "", "outside 0..1");
    refuse("{\"a\": 0, \"b\": \"1\"}", "", "is not an integer");
    refuse("{\"a\": 0, \"b\": 0}", "", "id 0 is given to two tokens");
    // a vocabulary without some byte symbols loads (a model trained on a small alphabet);
    // text with such a byte is refused by name, text without one encodes
    {
        const BpeTokenizer small = BpeTokenizer::parse("{\"a\": 0, \"b\": 1}", "", "S.json", "M.txt");
        CHECK(small.encode("abba").ids == std::vector<int32_t>{0, 1, 1, 0});
        try {
            (void)small.encode("ab@");
            FAIL("a byte outside the vocabulary was encoded");
        } catch (const attn::InputError& e) {
            CHECK(std::string(e.what()) ==
                  "the text has the byte 0x40 ('@'), which is not in the vocabulary of S.json (2 tokens)");
        }
    }
    refuse("{", "", "V.json");
    // a first line "#version" is a header only there; CR LF is accepted
    CHECK(BpeTokenizer::parse(vocab, "#version: 0.2\r\nĠ t\r\n").merges() == 1);
    CHECK(BpeTokenizer::parse(vocab, "").merges() == 0);
    refuse(vocab, "Ġ t\n#version: 0.2\n", "M.txt: merge 2 ('#version: 0.2'): '#version:' is not in V.json");
}

TEST_CASE("bpe: ids identical to transformers' GPT2Tokenizer on 240 texts") {
    const BpeTokenizer tok = BpeTokenizer::load(kTiny + "/vocab.json", kTiny + "/merges.txt");
    CHECK(tok.vocab_size() == 507);
    const nlohmann::json fx = attn::parse_json_relaxed(attn::read_file(kTiny + "/tokens.json"), "tokens.json");
    const auto& rows = fx.at("texts");
    REQUIRE(rows.size() >= 200);
    int same = 0, roundtrip = 0;
    for (const auto& row : rows) {
        const std::string text = row.at("text").get<std::string>();
        const auto want = row.at("ids").get<std::vector<int32_t>>();
        const auto got = tok.encode(text).ids;
        CHECK_MESSAGE(got == want, "text: " << nlohmann::json(text).dump());
        same += got == want;
        roundtrip += tok.decode(got) == text;
    }
    MESSAGE("identical ids on " << same << " of " << rows.size() << " texts; decode(encode(t)) == t on " << roundtrip);
    CHECK(roundtrip == static_cast<int>(rows.size()));
}
