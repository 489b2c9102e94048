// attn/model/tokenizer.hpp: BERT's WordPiece tokenizer (uncased, or cased: BertCasing), text -> token ids.
//
// Two stages, as in BERT and HF tokenizers' BertNormalizer + BertPreTokenizer + WordPiece:
//   basic    clean (drop NUL, U+FFFD and control characters; whitespace -> ' ')
//            -> put spaces around CJK ideographs -> NFD and drop non-spacing
//            marks (accents) -> lower-case (these two as BertCasing says, both
//            for an uncased model) -> split on whitespace -> split off
//            every punctuation character as its own word
//   wordpiece  each word: greedy longest-match-first against the vocabulary,
//            pieces after the first carry the "##" prefix; a word with a part
//            that matches nothing (or longer than 100 characters) is [UNK]
// encode() wraps the pieces as [CLS] ... [SEP] and truncates to max_len; the
// special tokens [CLS] [SEP] [MASK] [PAD] [UNK] typed in the text (exactly so,
// upper case) stay whole, as HF tokenizers match them before normalising, and
// text with no words (empty, blanks) is [CLS] [SEP], as in HF.
// Text is decoded with attn/core/utf8.hpp: invalid bytes become U+FFFD, which
// the cleaning step drops, as BERT does. The Unicode facts come from a
// generated table (scripts/gen-unicode-tables.py).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn {

// BERT's punctuation: every ASCII symbol (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)
// and every Unicode punctuation character (general category P*). The basic
// tokenizer makes each one a word of its own.
bool is_bert_punctuation(char32_t c);

// Which of BERT's case steps a model's tokenizer runs (tokenizer_config.json's do_lower_case and
// strip_accents; an uncased model such as MiniLM: both, a cased one: neither).
struct BertCasing {
    bool lower_case = true;
    bool strip_accents = true;
};

// The BERT normalisation of a whole text (clean, CJK spacing, then as `casing` says: accents
// stripped, lower case).
std::u32string bert_normalize(std::u32string_view text, BertCasing casing = {});
// Normalise, split on whitespace and punctuation: the words WordPiece sees.
std::vector<std::string> bert_basic_tokenize(std::string_view text, BertCasing casing = {});

// The special tokens that stay whole when typed in the text (see encode()).
inline constexpr std::string_view kBertSpecialTokens[] = {"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"};

struct Encoding {
    std::vector<int32_t> ids;         // [CLS] pieces... [SEP]
    std::vector<std::string> tokens;  // the same, as vocabulary strings
    std::vector<int32_t> word_of;     // per token: index of the word it came from (a typed special token
                                      // is a word), -1 for the [CLS] and [SEP] encode() adds
    int64_t full_length = 0;          // tokens before truncation (specials included)
    bool truncated = false;
    BertCasing casing;                // the normalisation encode() ran (find_word runs it on the word)
};

class WordPieceTokenizer {
public:
    // vocab: token strings, id = position. max_len counts [CLS] and [SEP].
    // Throws InputError if a special token is missing from the vocabulary.
    WordPieceTokenizer(std::vector<std::string> vocab, int64_t max_len, std::string what = "vocabulary");
    // Reads vocab.txt (one token a line). Throws InputError naming the file.
    static WordPieceTokenizer load(const std::string& vocab_path, int64_t max_len);

    // One basic word -> its pieces (["[UNK]"] if it cannot be covered).
    std::vector<std::string> wordpiece(const std::string& word) const;
    // Text -> [CLS] pieces [SEP], truncated to max_len tokens (Encoding::truncated says so).
    Encoding encode(std::string_view text) const;

    int32_t id(const std::string& token) const;  // -1 if absent
    const std::string& token(int32_t id) const;  // InputError if out of range
    int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
    int64_t max_len() const { return max_len_; }
    int32_t cls_id() const { return cls_; }
    int32_t sep_id() const { return sep_; }
    int32_t pad_id() const { return pad_; }
    int32_t unk_id() const { return unk_; }
    // The case steps encode() runs (default: lower case and strip accents, as uncased BERT).
    void set_casing(BertCasing c) { casing_ = c; }
    BertCasing casing() const { return casing_; }

private:
    std::vector<std::string> vocab_;
    std::unordered_map<std::string, int32_t> index_;
    int64_t max_len_;
    int32_t cls_ = -1, sep_ = -1, pad_ = -1, unk_ = -1;
    std::string what_;  // the vocab file (or "vocabulary"), for messages
    BertCasing casing_;
};

}  // namespace attn
