// attn/model/bpe.hpp: GPT-2's byte-level BPE tokenizer, text -> token ids, written from the
// algorithm (vocab.json + merges.txt as Hugging Face writes them).
//
// The tokenizer is read from vocab.json + merges.txt or from tokenizer.json (see
// parse_tokenizer_json for the fields it takes). Four steps, as GPT-2's encoder.py and
// HF tokenizers' ByteLevel + BPE:
//   special   the text is cut at every "<|endoftext|>" typed in it; that string is one
//             token of its own, the pieces between are tokenised separately
//   pre-split each piece is cut into words by GPT-2's pattern, tried in this order at
//             each position (the first alternative that matches wins):
//               's 't 're 've 'm 'll 'd        (contractions, lower case only)
//               ␣?\p{L}+   ␣?\p{N}+   ␣?[^\s\p{L}\p{N}]+
//               \s+(?!\S)  (a run of whitespace, less its last character when a
//                           non-space follows: that one goes with the next word)
//               \s+
//             \p{L} letters, \p{N} numbers (general categories L*, N*, from the
//             generated Unicode tables), \s Unicode White_Space
//   bytes     each word's UTF-8 bytes map one to one onto 256 printable code points
//             (bytes_to_unicode: the printable Latin-1 bytes stay themselves, the
//             other 68 move to U+0100..U+0143, so a space is 'Ġ' and a newline 'Ċ')
//   merges    each word starts as its mapped characters; the adjacent pair with the
//             lowest rank (line order in merges.txt) is merged everywhere in the word,
//             again and again, until no adjacent pair has a rank; each final symbol's
//             id is looked up in vocab.json
// Text is decoded with attn/core/utf8.hpp: a byte that is not valid UTF-8 is read as
// U+FFFD (and so tokenised as its three bytes EF BF BD).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attn {

// GPT-2's bytes_to_unicode: the printable code point byte b stands for.
char32_t bpe_byte_to_unicode(uint8_t b);
// Its inverse: the byte code point c stands for, or -1 when c stands for none.
int bpe_unicode_to_byte(char32_t c);

// The words GPT-2's pattern cuts `text` into (UTF-8, in order; their concatenation is
// the text, invalid bytes read as U+FFFD). No special-token handling.
std::vector<std::string> bpe_pre_split(std::string_view text);

// The special token GPT-2 models share: end of text (and start: generation prompts).
inline constexpr std::string_view kEndOfText = "<|endoftext|>";

struct BpeEncoding {
    std::vector<int32_t> ids;
    std::vector<std::string> tokens;  // the vocabulary strings ("Ġthe")
};

class BpeTokenizer {
public:
    // vocab: token -> id, the ids 0..N-1 each once; merges: pairs in rank order. Throws
    // InputError (naming `vocab_what` or `merges_what`) on ids that are not 0..N-1, a
    // vocabulary missing one of the 256 byte symbols, or a merge whose parts or result
    // are not in the vocabulary, or that appears twice.
    BpeTokenizer(std::unordered_map<std::string, int32_t> vocab,
                 std::vector<std::pair<std::string, std::string>> merges, std::string vocab_what = "vocabulary",
                 std::string merges_what = "merges");
    // The two files' texts (vocab.json, merges.txt) parsed and checked; `*_what` name them
    // in errors. merges.txt: an optional first line "#version...", then one merge a line,
    // two tokens separated by one space ("Ġ t"); CR LF line ends are accepted.
    static BpeTokenizer parse(std::string_view vocab_json, std::string_view merges_txt,
                              const std::string& vocab_what = "vocab.json",
                              const std::string& merges_what = "merges.txt");
    // Reads vocab.json and merges.txt. Throws InputError naming the file and the rule.
    static BpeTokenizer load(const std::string& vocab_path, const std::string& merges_path);
    // Hugging Face's tokenizer.json (the fast-tokenizer file) holding the same tokenizer:
    //   model           type "BPE"; vocab token -> id; merges in rank order, each "a b"
    //                   (one space) or ["a", "b"] (tokenizers >= 0.20); dropout null or 0,
    //                   no continuing_subword_prefix or end_of_word_suffix, byte_fallback and
    //                   ignore_merges false, unk_token null unless all 256 byte symbols are in
    //                   the vocabulary (then it never applies)
    //   added_tokens    only "<|endoftext|>", with no single_word, lstrip or rstrip; its id
    //                   is the vocabulary's, or the next one after it. "<|endoftext|>" in the
    //                   vocabulary but not added is refused (HF would tokenise it as text)
    //   normalizer      null
    //   pre_tokenizer   ByteLevel with add_prefix_space false and use_regex true (alone, or
    //                   the only member of a Sequence)
    //   post_processor  null, ByteLevel, or a TemplateProcessing whose "single" template adds
    //                   no token (what transformers >= 5 writes)
    //   decoder         null or ByteLevel
    //   truncation, padding   null
    // Anything else is refused, one InputError naming `what`, the field and the rule: the
    // ids would not be the ones transformers gives.
    static BpeTokenizer parse_tokenizer_json(std::string_view json, const std::string& what = "tokenizer.json");
    static BpeTokenizer load_tokenizer_json(const std::string& path);

    // One pre-split word (UTF-8) -> its final symbols (vocabulary strings).
    std::vector<std::string> bpe(std::string_view word) const;
    // Text -> ids (the four steps above). No tokens are added at either end.
    BpeEncoding encode(std::string_view text) const;
    // Ids -> the bytes they stand for ("<|endoftext|>" as itself). InputError on an id
    // out of range.
    std::string decode(const std::vector<int32_t>& ids) const;
    // One token as readable text: its bytes, with a byte sequence that is not valid UTF-8
    // shown as U+FFFD (a token may hold part of a character).
    std::string token_text(int32_t id) const;

    int32_t id(const std::string& token) const;  // -1 if absent
    const std::string& token(int32_t id) const;  // InputError if out of range
    int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
    int64_t merges() const { return static_cast<int64_t>(ranks_.size()); }
    int32_t eos_id() const { return eos_; }  // "<|endoftext|>", -1 if absent
    // A bound on the text bytes one token stands for (the longest vocabulary string's UTF-8
    // length): a text longer than n times this cannot fit in n tokens, so a caller with a
    // position limit can refuse it before the merges run.
    int64_t max_token_bytes() const { return max_token_bytes_; }

private:
    std::vector<std::string> vocab_;                  // id -> token
    std::unordered_map<std::string, int32_t> index_;  // token -> id
    std::unordered_map<std::string, int32_t> ranks_;  // "A B" -> rank
    int32_t eos_ = -1;
    int64_t max_token_bytes_ = 1;
    std::string vocab_what_;
};

}  // namespace attn
