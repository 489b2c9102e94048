// libFuzzer target: the WordPiece tokenizer on arbitrary bytes (invalid UTF-8
// included) with a toy vocabulary. It never throws: every input gives
// [CLS] ... [SEP] with ids inside the vocabulary and at most max_len tokens.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "attn/model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const attn::WordPieceTokenizer tok(
        {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "##a", "ab", "##b", "é", "中", ",", "##中"}, 16);
    const attn::Encoding e = tok.encode(std::string_view(reinterpret_cast<const char*>(data), size));
    if (e.ids.size() < 2 || e.ids.size() > 16 || e.ids.front() != tok.cls_id() || e.ids.back() != tok.sep_id() ||
        e.ids.size() != e.tokens.size() || e.ids.size() != e.word_of.size())
        std::abort();
    for (int32_t id : e.ids)
        if (id < 0 || id >= tok.vocab_size()) std::abort();
    return 0;
}
