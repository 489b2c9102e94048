// libFuzzer target: the vocab.txt loader (WordPieceTokenizer::load and the
// model's load_tokenizer, which checks the line count against config.json).
// Any bytes must give a tokenizer whose special tokens are where it says and
// whose encodings keep their invariants, or throw attn::InputError.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/core/errors.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/tokenizer.hpp"
#include "fuzz_file.hpp"

namespace {

void check_encoding(const attn::WordPieceTokenizer& tok, std::string_view text, int64_t max_len) {
    using attn::fuzz::fail;
    const attn::Encoding e = tok.encode(text);
    if (e.ids.size() < 2 || static_cast<int64_t>(e.ids.size()) > max_len) fail("encoding length");
    if (e.ids.front() != tok.cls_id() || e.ids.back() != tok.sep_id()) fail("encoding not [CLS] ... [SEP]");
    if (e.ids.size() != e.tokens.size() || e.ids.size() != e.word_of.size()) fail("encoding fields differ in length");
    for (size_t i = 0; i < e.ids.size(); ++i) {
        if (e.ids[i] < 0 || e.ids[i] >= tok.vocab_size()) fail("id outside the vocabulary");
        if (tok.token(e.ids[i]) != e.tokens[i]) fail("token string is not the id's");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    constexpr int64_t kMaxLen = 12;
    attn::fuzz::MemFile vocab(data, size);
    try {
        const attn::WordPieceTokenizer tok = attn::WordPieceTokenizer::load(vocab.path(), kMaxLen);
        if (tok.vocab_size() < 4) fail("fewer tokens than the four special ones");
        if (tok.token(tok.cls_id()) != "[CLS]" || tok.token(tok.sep_id()) != "[SEP]" ||
            tok.token(tok.pad_id()) != "[PAD]" || tok.token(tok.unk_id()) != "[UNK]")
            fail("a special id does not name its token");
        check_encoding(tok, "The animal didn't cross the street, [MASK] café 中文 ab", kMaxLen);
        // The vocabulary's own bytes as text: its pieces are in it, so WordPiece finds them.
        check_encoding(tok, std::string_view(reinterpret_cast<const char*>(data), std::min<size_t>(size, 256)),
                       kMaxLen);

        // config.json's vocab_size must match the line count, else InputError.
        attn::ModelFiles files;
        files.vocab = vocab.path();
        attn::BertConfig config;
        config.max_len = kMaxLen;
        config.vocab_size = tok.vocab_size();
        if (attn::load_tokenizer(files, config).vocab_size() != tok.vocab_size())
            fail("load_tokenizer changed the size");
        config.vocab_size = tok.vocab_size() + 1;
        try {
            (void)attn::load_tokenizer(files, config);
            fail("a vocab_size one above the line count was accepted");
        } catch (const attn::InputError&) {
        }
    } catch (const attn::InputError&) {
    }
    return 0;
}
