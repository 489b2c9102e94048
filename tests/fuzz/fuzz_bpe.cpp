// libFuzzer target: the byte-level BPE readers (vocab.json + merges.txt, BpeTokenizer::parse)
// and the tokenizer they build. The input is "VOCAB_JSON \0 MERGES_TXT"; without a NUL byte
// it is merges.txt alone, over a vocabulary of the 256 byte symbols plus every merge result
// the input names (so most inputs get past the checks to the merging). Any bytes must give
// a tokenizer that round-trips text (decode(encode(t)) is t, invalid UTF-8 read as U+FFFD)
// with every id in range, or throw attn::InputError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/model/bpe.hpp"
#include "fuzz_file.hpp"

namespace {

void check_roundtrip(const attn::BpeTokenizer& tok, std::string_view text) {
    using attn::fuzz::fail;
    const attn::BpeEncoding e = tok.encode(text);
    if (e.ids.size() != e.tokens.size()) fail("ids and tokens differ in length");
    for (size_t i = 0; i < e.ids.size(); ++i) {
        if (e.ids[i] < 0 || e.ids[i] >= tok.vocab_size()) fail("id outside the vocabulary");
        if (tok.token(e.ids[i]) != e.tokens[i]) fail("token string is not the id's");
    }
    if (tok.decode(e.ids) != attn::utf8_encode(attn::utf8_decode(text))) fail("decode(encode(text)) is not the text");
    std::string joined;
    for (const std::string& w : attn::bpe_pre_split(text)) {
        if (w.empty()) fail("an empty pre-split word");
        joined += w;
    }
    if (joined != attn::utf8_encode(attn::utf8_decode(text))) fail("the pre-split words do not make up the text");
}

// The vocabulary for an input without a NUL: the 256 byte symbols (ids 0..255), then, for each
// line "A B" of valid UTF-8, A, B and AB where new, then <|endoftext|>. Written as JSON text
// directly: building it through nlohmann::json cost a fifth of each execution.
std::string default_vocab(const std::string& merges) {
    static const std::pair<std::string, std::unordered_set<std::string>> base = [] {
        std::string text = "{";
        std::unordered_set<std::string> names;
        for (int b = 0; b < 256; ++b) {
            std::string s;
            attn::utf8_append(s, attn::bpe_byte_to_unicode(static_cast<uint8_t>(b)));
            text += fmt::format("{}{}:{}", b ? "," : "", nlohmann::json(s).dump(), b);
            names.insert(s);
        }
        return std::pair{text, names};
    }();
    std::string text = base.first;
    std::unordered_set<std::string> added;
    int id = 256;
    const auto add = [&](const std::string& t) {
        if (base.second.count(t) || !added.insert(t).second) return;
        text += fmt::format(",{}:{}", nlohmann::json(t).dump(), id++);
    };
    for (size_t pos = 0; pos < merges.size();) {
        size_t nl = merges.find('\n', pos);
        if (nl == std::string::npos) nl = merges.size();
        const std::string line = merges.substr(pos, nl - pos);
        pos = nl + 1;
        const size_t sp = line.find(' ');
        if (sp == std::string::npos || attn::utf8_encode(attn::utf8_decode(line)) != line) continue;
        add(line.substr(0, sp));
        add(line.substr(sp + 1));
        add(line.substr(0, sp) + line.substr(sp + 1));
    }
    add(std::string(attn::kEndOfText));
    return text + "}";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string vocab, merges;
    if (const size_t nul = in.find('\0'); nul != std::string_view::npos) {
        vocab = in.substr(0, nul);
        merges = in.substr(nul + 1);
    } else {
        merges = in;
        vocab = default_vocab(merges);
    }
    try {
        const attn::BpeTokenizer tok = attn::BpeTokenizer::parse(vocab, merges);
        check_roundtrip(tok, "Hello world, don't   stop\n\n中文 😀 naïve <|endoftext|>x 123");
        check_roundtrip(tok, merges.substr(0, 256));
        check_roundtrip(tok, std::string_view(reinterpret_cast<const char*>(data), std::min<size_t>(size, 256)));
    } catch (const attn::InputError&) {
    }
    return 0;
}
