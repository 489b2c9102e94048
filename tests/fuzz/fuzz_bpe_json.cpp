// libFuzzer target: BpeTokenizer::parse_tokenizer_json, the reader of Hugging Face's
// tokenizer.json for GPT-2 folders, and the tokenizer it builds. Any bytes must give a
// tokenizer that round-trips text (decode(encode(t)) is t, invalid UTF-8 read as U+FFFD) with
// every id in range and each token the id's string, or throw attn::InputError (from the
// reader, or from encode on a byte the vocabulary lacks), nothing else; JSON nested deeper
// than kMaxJsonDepth is always refused.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bpe.hpp"
#include "fuzz_file.hpp"

namespace {

void check_roundtrip(const attn::BpeTokenizer& tok, std::string_view text) {
    using attn::fuzz::fail;
    attn::BpeEncoding e;
    try {
        e = tok.encode(text);
    } catch (const attn::InputError&) {
        return;  // a byte without its symbol in this vocabulary: refused by name
    }
    if (e.ids.size() != e.tokens.size()) fail("ids and tokens differ in length");
    for (size_t i = 0; i < e.ids.size(); ++i) {
        if (e.ids[i] < 0 || e.ids[i] >= tok.vocab_size()) fail("id outside the vocabulary");
        if (tok.token(e.ids[i]) != e.tokens[i]) fail("token string is not the id's");
    }
    if (tok.decode(e.ids) != attn::utf8_encode(attn::utf8_decode(text))) fail("decode(encode(text)) is not the text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    try {
        const attn::BpeTokenizer tok = attn::BpeTokenizer::parse_tokenizer_json(in, "tokenizer.json");
        if (tok.vocab_size() < 1) attn::fuzz::fail("an empty vocabulary was accepted");
        if (attn::json_depth(in, attn::kMaxJsonDepth) > attn::kMaxJsonDepth) attn::fuzz::fail("deep JSON was read");
        if (tok.eos_id() >= tok.vocab_size()) attn::fuzz::fail("<|endoftext|> outside the vocabulary");
        check_roundtrip(tok, "Hello world, don't   stop\n\n中文 😀 naïve <|endoftext|>x 123 ab ba");
        check_roundtrip(tok, in.substr(0, std::min<size_t>(size, 256)));
    } catch (const attn::InputError&) {
    }
    return 0;
}
