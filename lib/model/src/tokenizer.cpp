// tokenizer.cpp: BERT basic tokenisation and WordPiece (see attn/model/tokenizer.hpp).
// The order of the normalisation steps follows HF tokenizers' BertNormalizer,
// the tokenizer sentence-transformers runs: clean, CJK, NFD + strip Mn, lower (the last two
// as BertCasing says).
#include "attn/model/tokenizer.hpp"

#include <algorithm>
#include <sstream>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "unicode_tables.hpp"

namespace attn {

namespace {

using namespace attn::unicode;

const CodeMapping* find_mapping(const CodeMapping* m, size_t n, char32_t c) {
    const CodeMapping* end = m + n;
    const CodeMapping* it = std::lower_bound(m, end, c, [](const CodeMapping& x, char32_t v) { return x.cp < v; });
    return (it != end && it->cp == c) ? it : nullptr;
}

uint8_t combining_class(char32_t c) {
    const CombiningRun* end = kCombining + kCombining_size;
    const CombiningRun* it =
        std::upper_bound(kCombining, end, c, [](char32_t v, const CombiningRun& x) { return v < x.lo; });
    return (it != kCombining && (it - 1)->hi >= c) ? (it - 1)->cls : 0;
}

bool is_whitespace(char32_t c) {
    return c == U'\t' || c == U'\n' || c == U'\r' || in_ranges(kWhitespace, kWhitespace_size, c);
}
bool is_control(char32_t c) {
    if (c == U'\t' || c == U'\n' || c == U'\r') return false;
    return in_ranges(kOther, kOther_size, c);
}
bool is_nonspacing_mark(char32_t c) { return in_ranges(kNonspacingMark, kNonspacingMark_size, c); }

// The "CJK Unified Ideographs" blocks BERT isolates (not Japanese kana or Hangul).
bool is_cjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Canonical decomposition of the whole string (NFD).
std::u32string nfd(std::u32string_view s) {
    // pass 1: decompose each character (Hangul syllables by formula)
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : s) {
        if (c >= 0xAC00 && c <= 0xD7A3) {
            const char32_t si = c - 0xAC00;
            out.push_back(0x1100 + si / 588);
            out.push_back(0x1161 + (si % 588) / 28);
            if (si % 28 != 0) out.push_back(0x11A7 + si % 28);
        } else if (const CodeMapping* m = find_mapping(kDecomposition, kDecomposition_size, c)) {
            out.append(kDecomposition_pool + m->offset, m->length);
        } else {
            out.push_back(c);
        }
    }
    // pass 2: canonical ordering: stable sort each run of non-zero combining classes
    for (size_t i = 0; i < out.size();) {
        if (combining_class(out[i]) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < out.size() && combining_class(out[j]) != 0) ++j;
        std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
                         [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
        i = j;
    }
    return out;
}

}  // namespace

bool is_bert_punctuation(char32_t c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
    return in_ranges(kPunctuation, kPunctuation_size, c);
}

std::u32string bert_normalize(std::u32string_view text, BertCasing casing) {
    // pass 1: clean (drop NUL, U+FFFD, controls; whitespace -> ' ') and space out CJK ideographs
    std::u32string a;
    a.reserve(text.size());
    for (char32_t c : text) {
        if (c == 0 || c == 0xFFFD || is_control(c)) continue;
        if (is_whitespace(c)) {
            a.push_back(U' ');
        } else if (is_cjk(c)) {
            a.push_back(U' ');
            a.push_back(c);
            a.push_back(U' ');
        } else {
            a.push_back(c);
        }
    }
    // pass 2: strip accents: NFD, then drop non-spacing marks
    if (!casing.strip_accents && !casing.lower_case) return a;
    std::u32string d = casing.strip_accents ? nfd(a) : std::move(a);
    std::u32string b;
    b.reserve(d.size());
    for (char32_t c : d)
        if (!casing.strip_accents || !is_nonspacing_mark(c)) b.push_back(c);
    if (!casing.lower_case) return b;
    // pass 3: lower-case, character by character (full mappings: U+0130 -> i + U+0307)
    std::u32string out;
    out.reserve(b.size());
    for (char32_t c : b) {
        if (c < 0x80) out.push_back((c >= U'A' && c <= U'Z') ? c + 32 : c);
        else if (const CodeMapping* m = find_mapping(kLowercase, kLowercase_size, c))
            out.append(kLowercase_pool + m->offset, m->length);
        else out.push_back(c);
    }
    return out;
}

std::vector<std::string> bert_basic_tokenize(std::string_view text, BertCasing casing) {
    const std::u32string norm = bert_normalize(utf8_decode(text), casing);
    // pass 1: split on whitespace (dropped) and punctuation (kept, alone)
    std::vector<std::string> words;
    std::u32string cur;
    auto flush = [&] {
        if (!cur.empty()) words.push_back(utf8_encode(cur));
        cur.clear();
    };
    for (char32_t c : norm) {
        if (is_whitespace(c)) {
            flush();
        } else if (is_bert_punctuation(c)) {
            flush();
            cur.push_back(c);
            flush();
        } else {
            cur.push_back(c);
        }
    }
    flush();
    return words;
}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, int64_t max_len, std::string what)
    : vocab_(std::move(vocab)), max_len_(max_len), what_(what) {
    if (max_len_ < 2)
        throw InputError(what + ": max_len must be at least 2 ([CLS] and [SEP]), got " + std::to_string(max_len_));
    if (vocab_.size() > static_cast<size_t>(INT32_MAX)) throw InputError(what + ": vocabulary too large");
    for (size_t i = 0; i < vocab_.size(); ++i) index_.emplace(vocab_[i], static_cast<int32_t>(i));  // first wins
    cls_ = id("[CLS]");
    sep_ = id("[SEP]");
    pad_ = id("[PAD]");
    unk_ = id("[UNK]");
    for (const char* s : {"[CLS]", "[SEP]", "[PAD]", "[UNK]"})
        if (id(s) < 0) throw InputError(what + ": the vocabulary has no " + s + " token");
}

WordPieceTokenizer WordPieceTokenizer::load(const std::string& vocab_path, int64_t max_len) {
    std::istringstream in(read_file(vocab_path));  // a regular file or a one-line refusal naming it
    std::vector<std::string> vocab;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        vocab.push_back(line);
    }
    if (vocab.empty()) throw InputError(vocab_path + ": the vocabulary is empty");
    return WordPieceTokenizer(std::move(vocab), max_len, vocab_path);
}

int32_t WordPieceTokenizer::id(const std::string& token) const {
    auto it = index_.find(token);
    return it == index_.end() ? -1 : it->second;
}

const std::string& WordPieceTokenizer::token(int32_t i) const {
    if (i < 0 || static_cast<size_t>(i) >= vocab_.size())
        throw InputError(what_ + ": token id " + std::to_string(i) + " is outside the vocabulary (size " +
                         std::to_string(vocab_.size()) + ")");
    return vocab_[static_cast<size_t>(i)];
}

std::vector<std::string> WordPieceTokenizer::wordpiece(const std::string& word) const {
    // Greedy longest match first, on character boundaries.
    const std::u32string w = utf8_decode(word);
    if (w.size() > 100) return {"[UNK]"};  // max_input_chars_per_word, as BERT
    std::vector<std::string> pieces;
    size_t start = 0;
    while (start < w.size()) {
        size_t end = w.size();
        std::string found;
        while (end > start) {
            std::string sub = utf8_encode(std::u32string_view(w).substr(start, end - start));
            if (start > 0) sub = "##" + sub;
            if (index_.count(sub)) {
                found = std::move(sub);
                break;
            }
            --end;
        }
        if (found.empty()) return {"[UNK]"};
        pieces.push_back(std::move(found));
        start = end;
    }
    return pieces;
}

Encoding WordPieceTokenizer::encode(std::string_view text) const {
    Encoding e;
    e.casing = casing_;
    e.tokens.push_back("[CLS]");
    e.word_of.push_back(-1);
    int32_t word = 0;
    auto add_words = [&](std::string_view part) {
        for (const std::string& w : bert_basic_tokenize(part, casing_)) {
            for (auto& p : wordpiece(w)) {
                e.tokens.push_back(std::move(p));
                e.word_of.push_back(word);
            }
            ++word;
        }
    };
    // A special token typed in the text, exactly (case and all), is that token and a
    // word of its own, as in HF tokenizers, where they are added tokens matched
    // before normalisation. The text between them is tokenised as usual.
    size_t done = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '[') continue;
        for (std::string_view s : kBertSpecialTokens) {
            if (text.substr(i, s.size()) != s || id(std::string(s)) < 0) continue;
            add_words(text.substr(done, i - done));
            e.tokens.emplace_back(s);
            e.word_of.push_back(word++);
            done = i + s.size();
            i = done - 1;
            break;
        }
    }
    add_words(text.substr(done));
    e.tokens.push_back("[SEP]");
    e.word_of.push_back(-1);
    e.full_length = static_cast<int64_t>(e.tokens.size());
    if (e.full_length > max_len_) {  // keep [CLS] + the first max_len-2 pieces + [SEP]
        e.truncated = true;
        e.tokens.resize(static_cast<size_t>(max_len_ - 1));
        e.word_of.resize(static_cast<size_t>(max_len_ - 1));
        e.tokens.push_back("[SEP]");
        e.word_of.push_back(-1);
    }
    for (const auto& t : e.tokens) e.ids.push_back(id(t));
    return e;
}

}  // namespace attn
