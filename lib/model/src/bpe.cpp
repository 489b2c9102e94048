// bpe.cpp: GPT-2's byte-level BPE (see attn/model/bpe.hpp for the four steps).
#include "attn/model/bpe.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "unicode_tables.hpp"

namespace attn {

namespace {

using namespace attn::unicode;

// \s of the pattern: the Unicode White_Space property (what the regex engines of
// GPT-2's encoder.py and HF tokenizers match; Python's str.isspace also takes
// U+001C..U+001F, which are not White_Space).
bool is_space(char32_t c) {
    return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
bool is_letter(char32_t c) { return in_ranges(kLetter, kLetter_size, c); }
bool is_number(char32_t c) { return in_ranges(kNumber, kNumber_size, c); }
bool is_other(char32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); }

// bytes_to_unicode as a table: byte -> code point.
const std::array<char32_t, 256>& byte_table() {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> t{};
        char32_t next = 256;  // the bytes that are not printable, in order, from U+0100
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            t[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
        }
        return t;
    }();
    return table;
}

// The length of the pattern's match at position i of s (always >= 1 when i < size).
size_t match_at(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    auto run = [&](size_t j, bool (*pred)(char32_t)) {
        while (j < n && pred(s[j])) ++j;
        return j;
    };
    const char32_t c = s[i];
    // 's 't 're 've 'm 'll 'd
    if (c == U'\'' && i + 1 < n) {
        const char32_t a = s[i + 1];
        if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
        if (i + 2 < n) {
            const char32_t b = s[i + 2];
            if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
        }
    }
    // ␣?\p{L}+  ␣?\p{N}+  ␣?[^\s\p{L}\p{N}]+  (the optional space first, as the regex tries it)
    for (bool (*pred)(char32_t) : {is_letter, is_number, is_other}) {
        if (c == U' ' && i + 1 < n && pred(s[i + 1])) return run(i + 1, pred) - i;
        if (pred(c)) return run(i, pred) - i;
    }
    // c is whitespace. \s+(?!\S): the whole run if it ends the text, else the run less
    // its last character (which then may lead the next word), if that leaves any.
    const size_t end = run(i, is_space);
    if (end == n) return end - i;
    if (end - i >= 2) return end - i - 1;
    return 1;  // \s+ : a single whitespace before a non-space
}

[[noreturn]] void bad(const std::string& what, const std::string& rule) { throw InputError(what + ": " + rule); }

// A token for a message: at most 40 code points, control characters escaped.
std::string show(std::string_view tok) {
    std::string out;
    size_t count = 0;
    for (size_t i = 0; i < tok.size() && count < 40; ++count) {
        const char32_t c = utf8_next(tok, i);
        if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
        else utf8_append(out, c);
    }
    return count >= 40 ? out + "…" : out;
}

}  // namespace

char32_t bpe_byte_to_unicode(uint8_t b) { return byte_table()[b]; }

int bpe_unicode_to_byte(char32_t c) {
    if (c < 256) {
        if (byte_table()[c] == c) return static_cast<int>(c);
        return -1;
    }
    const auto& t = byte_table();
    for (int b = 0; b < 256; ++b)
        if (t[static_cast<size_t>(b)] == c) return b;
    return -1;
}

std::vector<std::string> bpe_pre_split(std::string_view text) {
    const std::u32string s = utf8_decode(text);
    std::vector<std::string> words;
    for (size_t i = 0; i < s.size();) {
        const size_t len = match_at(s, i);
        words.push_back(utf8_encode(std::u32string_view(s).substr(i, len)));
        i += len;
    }
    return words;
}

BpeTokenizer::BpeTokenizer(std::unordered_map<std::string, int32_t> vocab,
                           std::vector<std::pair<std::string, std::string>> merges, std::string vocab_what,
                           std::string merges_what)
    : vocab_what_(std::move(vocab_what)) {
    // ids: 0..N-1, each once
    const size_t N = vocab.size();
    if (N == 0) bad(vocab_what_, "has no tokens");
    vocab_.assign(N, std::string());
    std::vector<bool> seen(N, false);
    for (auto& [tok, id] : vocab) {
        if (id < 0 || static_cast<size_t>(id) >= N)
            bad(vocab_what_,
                fmt::format("token '{}' has id {}, outside 0..{} (the ids must be 0..N-1 for N = {} tokens)", show(tok),
                            id, N - 1, N));
        if (seen[static_cast<size_t>(id)])
            bad(vocab_what_, fmt::format("id {} is given to two tokens ('{}' and '{}')", id,
                                         show(vocab_[static_cast<size_t>(id)]), show(tok)));
        seen[static_cast<size_t>(id)] = true;
        vocab_[static_cast<size_t>(id)] = tok;
    }
    index_ = std::move(vocab);
    for (const std::string& tok : vocab_)  // each character stands for one byte, and takes 1 or 2 in UTF-8
        max_token_bytes_ = std::max<int64_t>(max_token_bytes_, static_cast<int64_t>(tok.size()));
    // A vocabulary may lack some of the 256 byte symbols (a model trained on a small alphabet,
    // as attn train's chars and induction models): encode() refuses text with such a byte.
    eos_ = id(std::string(kEndOfText));
    ranks_.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
        const auto& [a, b] = merges[r];
        const std::string where = fmt::format("{}: merge {} ('{} {}')", merges_what, r + 1, show(a), show(b));
        for (const std::string* part : {&a, &b})
            if (index_.count(*part) == 0) bad(where, fmt::format("'{}' is not in {}", show(*part), vocab_what_));
        if (index_.count(a + b) == 0)
            bad(where, fmt::format("the merged token '{}' is not in {}", show(a + b), vocab_what_));
        if (!ranks_.emplace(a + " " + b, static_cast<int32_t>(r)).second) bad(where, "appears twice");
    }
}

namespace {

// A JSON object of token -> id (vocab.json, tokenizer.json's model.vocab), each id an integer.
std::unordered_map<std::string, int32_t> vocab_from_json(const nlohmann::json& j, const std::string& what) {
    if (!j.is_object()) bad(what, "not a JSON object of token -> id");
    std::unordered_map<std::string, int32_t> vocab;
    vocab.reserve(j.size());
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!it.value().is_number_integer())
            bad(what, fmt::format("the id of token '{}' is not an integer", show(it.key())));
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || id > std::numeric_limits<int32_t>::max())
            bad(what, fmt::format("token '{}' has id {}, outside 0..N-1", show(it.key()), id));
        vocab.emplace(it.key(), static_cast<int32_t>(id));
    }
    if (vocab.size() != j.size()) bad(what, "a token appears twice");
    return vocab;
}

// One merge written "A B": the two tokens, or a refusal naming `where`.
std::pair<std::string, std::string> split_merge(std::string_view line, const std::string& where) {
    if (line.empty()) bad(where, "is empty (each line is one merge: two tokens separated by one space)");
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
        bad(where, fmt::format("'{}' is not two tokens separated by one space", show(line)));
    return {std::string(line.substr(0, sp)), std::string(line.substr(sp + 1))};
}

}  // namespace

BpeTokenizer BpeTokenizer::parse(std::string_view vocab_json, std::string_view merges_txt,
                                 const std::string& vocab_what, const std::string& merges_what) {
    std::unordered_map<std::string, int32_t> vocab =
        vocab_from_json(parse_json_relaxed(vocab_json, vocab_what), vocab_what);
    std::vector<std::pair<std::string, std::string>> merges;
    size_t line_no = 0;
    for (size_t pos = 0; pos < merges_txt.size();) {
        size_t nl = merges_txt.find('\n', pos);
        if (nl == std::string_view::npos) nl = merges_txt.size();
        std::string_view line = merges_txt.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line_no == 1 && line.substr(0, 8) == "#version") continue;
        merges.push_back(split_merge(line, fmt::format("{}: line {}", merges_what, line_no)));
    }
    return BpeTokenizer(std::move(vocab), std::move(merges), vocab_what, merges_what);
}

namespace {

// tokenizer.json's parts, read by parse_tokenizer_json. obj[key] when obj is an object holding it, else null.
const nlohmann::json* field(const nlohmann::json& obj, const char* key) {
    return obj.is_object() && obj.contains(key) ? &obj[key] : nullptr;
}
// absent, null, false, "" or 0: the setting is off
bool is_off(const nlohmann::json* v) {
    return v == nullptr || v->is_null() || (v->is_boolean() && !v->get<bool>()) ||
           (v->is_string() && v->get_ref<const std::string&>().empty()) || (v->is_number() && v->get<double>() == 0.0);
}
std::string type_of(const nlohmann::json& obj) {
    const nlohmann::json* t = field(obj, "type");
    return t != nullptr && t->is_string() ? t->get<std::string>() : std::string();
}
// a component for messages: its "type", else its JSON (shortened)
std::string describe(const nlohmann::json& obj) {
    const std::string t = type_of(obj);
    return t.empty() ? show(obj.dump()) : "\"" + show(t) + "\"";
}

// pre_tokenizer: ByteLevel, alone or the only member of a Sequence
void check_pre_tokenizer(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json* pt = field(j, "pre_tokenizer");
    if (pt != nullptr && type_of(*pt) == "Sequence") {
        const nlohmann::json* list = field(*pt, "pretokenizers");
        if (list != nullptr && list->is_array() && list->size() == 1) pt = &(*list)[0];
    }
    if (pt == nullptr || pt->is_null())
        bad(what, "the pre_tokenizer is missing or null; attn implements ByteLevel (GPT-2's pattern) only");
    if (type_of(*pt) != "ByteLevel")
        bad(what, fmt::format("the pre_tokenizer {} is not one attn implements (ByteLevel, GPT-2's pattern)",
                              describe(*pt)));
    if (!is_off(field(*pt, "add_prefix_space")))
        bad(what,
            "pre_tokenizer.add_prefix_space is true, which attn does not implement (it must be false, as GPT-2's)");
    const nlohmann::json* re = field(*pt, "use_regex");
    if (re != nullptr && !(re->is_boolean() && re->get<bool>()))
        bad(what, "pre_tokenizer.use_regex is not true: attn always splits by GPT-2's pattern");
}

// Everything around the model: no truncation, padding or normalizer, a ByteLevel pre_tokenizer, a
// post_processor that adds no token to a single text, a ByteLevel decoder (or none).
void check_pipeline(const nlohmann::json& j, const std::string& what) {
    for (const char* key : {"truncation", "padding"})
        if (!is_off(field(j, key)))
            bad(what, fmt::format("\"{}\" is set; attn tokenises one whole text (it must be null)", key));
    if (!is_off(field(j, "normalizer")))
        bad(what, fmt::format("the normalizer {} is not one attn implements (GPT-2's byte-level BPE has none: null)",
                              describe(*field(j, "normalizer"))));
    check_pre_tokenizer(j, what);
    if (const nlohmann::json* pp = field(j, "post_processor"); !is_off(pp)) {
        const std::string t = type_of(*pp);
        bool adds = t != "ByteLevel";
        if (t == "TemplateProcessing") {
            const nlohmann::json* single = field(*pp, "single");
            adds = single == nullptr || !single->is_array();
            if (!adds)
                for (const auto& piece : *single) adds = adds || !(piece.is_object() && piece.contains("Sequence"));
        }
        if (adds)
            bad(what, fmt::format("the post_processor {} adds tokens or is not one attn implements (null, ByteLevel, "
                                  "or a TemplateProcessing that adds none)",
                                  describe(*pp)));
    }
    if (const nlohmann::json* d = field(j, "decoder"); !is_off(d) && type_of(*d) != "ByteLevel")
        bad(what, fmt::format("the decoder {} is not one attn implements (ByteLevel or null)", describe(*d)));
}

// model: byte-level BPE, with no setting attn's BPE does not implement
const nlohmann::json& bpe_model(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json* model = field(j, "model");
    if (model == nullptr || !model->is_object()) bad(what, "has no \"model\" object");
    const std::string mtype = type_of(*model);
    if (mtype != "BPE")
        bad(what, fmt::format("model.type is {}; attn reads only \"BPE\" (byte-level, as GPT-2)",
                              mtype.empty() ? std::string("missing") : "\"" + show(mtype) + "\""));
    for (auto it = model->begin(); it != model->end(); ++it) {
        const std::string& k = it.key();
        if (k == "type" || k == "vocab" || k == "merges" || k == "unk_token" || k == "fuse_unk") continue;
        if (k == "dropout" || k == "continuing_subword_prefix" || k == "end_of_word_suffix" || k == "byte_fallback" ||
            k == "ignore_merges" || is_off(&it.value())) {
            if (!is_off(&it.value()))
                bad(what,
                    fmt::format("model.{} is {}, which attn's BPE does not implement (it must be null, false or empty)",
                                show(k), show(it.value().dump())));
            continue;
        }
        bad(what, fmt::format("model.{} is {}, a setting attn's BPE does not know", show(k), show(it.value().dump())));
    }
    return *model;
}

// model.merges: "a b" strings or [a, b] pairs
std::vector<std::pair<std::string, std::string>> bpe_merges(const nlohmann::json& model, const std::string& what) {
    const nlohmann::json* mm = field(model, "merges");
    if (mm == nullptr || !mm->is_array()) bad(what, "model.merges is not a list");
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(mm->size());
    for (size_t r = 0; r < mm->size(); ++r) {
        const nlohmann::json& m = (*mm)[r];
        const std::string where = fmt::format("{}: model.merges[{}]", what, r);
        if (m.is_string()) {
            merges.push_back(split_merge(m.get_ref<const std::string&>(), where));
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string() && !m[0].empty() &&
                   !m[1].empty()) {
            merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        } else {
            bad(where, "is neither \"a b\" nor a pair [\"a\", \"b\"] of tokens");
        }
    }
    return merges;
}

// unk_token: harmless only when every byte has its symbol (then no symbol is unknown)
void check_unk_token(const nlohmann::json& model, const std::unordered_map<std::string, int32_t>& vocab,
                     const std::string& what) {
    if (is_off(field(model, "unk_token"))) return;
    int bytes = 0;
    for (int b = 0; b < 256; ++b) {
        std::string s;
        utf8_append(s, bpe_byte_to_unicode(static_cast<uint8_t>(b)));
        bytes += vocab.count(s) > 0;
    }
    if (bytes < 256)
        bad(what, fmt::format("model.unk_token is set and the vocabulary lacks {} of the 256 byte symbols: attn "
                              "refuses such bytes instead of writing an unknown token (unk_token must be null)",
                              256 - bytes));
}

// added tokens: only <|endoftext|>, matched as it is typed; added to `vocab` when model.vocab lacks it
void add_end_of_text(const nlohmann::json& j, std::unordered_map<std::string, int32_t>& vocab,
                     const std::string& what) {
    const std::string eot(kEndOfText);
    bool eot_added = false;
    if (const nlohmann::json* at = field(j, "added_tokens"); !is_off(at)) {
        if (!at->is_array()) bad(what, "added_tokens is not a list");
        for (size_t i = 0; i < at->size(); ++i) {
            const nlohmann::json& a = (*at)[i];
            const std::string where = fmt::format("{}: added_tokens[{}]", what, i);
            const nlohmann::json* content = field(a, "content");
            const nlohmann::json* id = field(a, "id");
            if (content == nullptr || !content->is_string() || id == nullptr || !id->is_number_integer())
                bad(where, "needs a string \"content\" and an integer \"id\"");
            if (content->get_ref<const std::string&>() != eot)
                bad(where, fmt::format("'{}' is not one attn implements (its tokenizer sets apart only {} in the text)",
                                       show(content->get_ref<const std::string&>()), eot));
            for (const char* key : {"single_word", "lstrip", "rstrip"})
                if (!is_off(field(a, key)))
                    bad(where, fmt::format("\"{}\" is true, which attn does not implement", key));
            const int64_t want = id->get<int64_t>();
            const auto in_vocab = vocab.find(eot);
            if (in_vocab != vocab.end()) {
                if (in_vocab->second != want)
                    bad(where, fmt::format("{} has id {} here but {} in model.vocab", eot, want, in_vocab->second));
            } else {
                if (want != static_cast<int64_t>(vocab.size()))
                    bad(where, fmt::format("{} has id {}, not the next id after model.vocab's {} tokens", eot, want,
                                           vocab.size()));
                vocab.emplace(eot, static_cast<int32_t>(want));
            }
            eot_added = true;
        }
    }
    if (!eot_added && vocab.count(eot) > 0)
        bad(what, fmt::format("{} is in model.vocab but not in added_tokens, so transformers would tokenise it as "
                              "text; attn always sets it apart (add it to added_tokens)",
                              eot));
}

}  // namespace

BpeTokenizer BpeTokenizer::parse_tokenizer_json(std::string_view json, const std::string& what) {
    const nlohmann::json j = parse_json_relaxed(json, what);
    if (!j.is_object()) bad(what, "not a JSON object (Hugging Face's tokenizer.json)");
    check_pipeline(j, what);
    const nlohmann::json& model = bpe_model(j, what);
    const nlohmann::json* mv = field(model, "vocab");
    if (mv == nullptr) bad(what, "model.vocab is missing");
    std::unordered_map<std::string, int32_t> vocab = vocab_from_json(*mv, what + ": model.vocab");
    std::vector<std::pair<std::string, std::string>> merges = bpe_merges(model, what);
    check_unk_token(model, vocab, what);
    add_end_of_text(j, vocab, what);
    return BpeTokenizer(std::move(vocab), std::move(merges), what, what + ": model.merges");
}

BpeTokenizer BpeTokenizer::load_tokenizer_json(const std::string& path) {
    return parse_tokenizer_json(read_file(path), path);
}

BpeTokenizer BpeTokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
    return parse(read_file(vocab_path), read_file(merges_path), vocab_path, merges_path);
}

std::vector<std::string> BpeTokenizer::bpe(std::string_view word) const {
    // symbols: one per byte, as its mapped character
    std::vector<std::string> sym;
    for (unsigned char b : word) {
        std::string s;
        utf8_append(s, bpe_byte_to_unicode(b));
        sym.push_back(std::move(s));
    }
    while (sym.size() > 1) {
        // the adjacent pair of lowest rank
        int32_t best = std::numeric_limits<int32_t>::max();
        std::string best_a, best_b;
        for (size_t i = 0; i + 1 < sym.size(); ++i) {
            const auto it = ranks_.find(sym[i] + " " + sym[i + 1]);
            if (it != ranks_.end() && it->second < best) {
                best = it->second;
                best_a = sym[i];
                best_b = sym[i + 1];
            }
        }
        if (best == std::numeric_limits<int32_t>::max()) break;
        // merge every occurrence, left to right
        std::vector<std::string> next;
        next.reserve(sym.size());
        for (size_t i = 0; i < sym.size();) {
            if (i + 1 < sym.size() && sym[i] == best_a && sym[i + 1] == best_b) {
                next.push_back(best_a + best_b);
                i += 2;
            } else {
                next.push_back(std::move(sym[i]));
                i += 1;
            }
        }
        sym = std::move(next);
    }
    return sym;
}

BpeEncoding BpeTokenizer::encode(std::string_view text) const {
    BpeEncoding enc;
    auto add_piece = [&](std::string_view piece) {
        for (const std::string& word : bpe_pre_split(piece))
            for (std::string& s : bpe(word)) {
                const auto it = index_.find(s);
                // every merge result is in the vocabulary (checked at load); a lone byte may not be
                if (it == index_.end()) {
                    const int b = bpe_unicode_to_byte(utf8_decode(s).at(0));
                    throw InputError(fmt::format(
                        "the text has the byte 0x{:02x}{}, which is not in the vocabulary of {} ({} tokens)", b,
                        b >= 0x20 && b < 0x7f ? fmt::format(" ('{}')", static_cast<char>(b)) : std::string(),
                        vocab_what_, vocab_.size()));
                }
                enc.ids.push_back(it->second);
                enc.tokens.push_back(std::move(s));
            }
    };
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t hit = eos_ >= 0 ? text.find(kEndOfText, pos) : std::string_view::npos;
        add_piece(text.substr(pos, hit == std::string_view::npos ? std::string_view::npos : hit - pos));
        if (hit == std::string_view::npos) break;
        enc.ids.push_back(eos_);
        enc.tokens.emplace_back(kEndOfText);
        pos = hit + kEndOfText.size();
    }
    return enc;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    for (int32_t id : ids) {
        const std::string& tok = token(id);
        if (id == eos_) {
            out += tok;
            continue;
        }
        for (size_t i = 0; i < tok.size();) {
            const char32_t c = utf8_next(tok, i);
            const int b = bpe_unicode_to_byte(c);
            if (b >= 0) out.push_back(static_cast<char>(b));
            else utf8_append(out, c);  // a vocabulary entry outside the byte alphabet: as written
        }
    }
    return out;
}

std::string BpeTokenizer::token_text(int32_t id) const { return utf8_encode(utf8_decode(decode({id}))); }

int32_t BpeTokenizer::id(const std::string& token) const {
    const auto it = index_.find(token);
    return it == index_.end() ? -1 : it->second;
}

const std::string& BpeTokenizer::token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= vocab_.size())
        throw InputError(fmt::format("token id {} is outside the vocabulary of {} (0..{})", id, vocab_what_,
                                     vocab_.size() - 1));
    return vocab_[static_cast<size_t>(id)];
}

}  // namespace attn
