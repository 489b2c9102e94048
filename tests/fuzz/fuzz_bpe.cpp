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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string vocab, merges;
    if (const size_t nul = in.find('\0'); nul != std::string_view::npos) {
        vocab = in.substr(0, nul);
        merges = in.substr(nul + 1);
    } else {
        merges = in;
        nlohmann::json j = nlohmann::json::object();
        int id = 0;
        for (int b = 0; b < 256; ++b) {
            std::string s;
            attn::utf8_append(s, attn::bpe_byte_to_unicode(static_cast<uint8_t>(b)));
            j[s] = id++;
        }
        // each line "A B" adds A, B and AB (valid UTF-8 only: JSON keys are text)
        for (size_t pos = 0; pos < merges.size();) {
            size_t nl = merges.find('\n', pos);
            if (nl == std::string::npos) nl = merges.size();
            const std::string line = merges.substr(pos, nl - pos);
            pos = nl + 1;
            const size_t sp = line.find(' ');
            if (sp == std::string::npos || attn::utf8_encode(attn::utf8_decode(line)) != line) continue;
            for (const std::string& t : {line.substr(0, sp), line.substr(sp + 1), line.substr(0, sp) + line.substr(sp + 1)})
                if (!j.contains(t)) j[t] = id++;
        }
        j[std::string(attn::kEndOfText)] = id++;
        vocab = j.dump();
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
