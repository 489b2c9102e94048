// Text wrapping for a lesson's output: greedy on display columns, with the line-break rules of Chinese.
#include "text_wrap.hpp"

#include <algorithm>
#include <string>

#include "attn/core/utf8.hpp"
#include "lesson.hpp"

namespace attn::lessons {

namespace {
// Line breaking for Chinese (and any East Asian wide text): a line may break
// between two characters when either is wide, except before closing
// punctuation and after opening punctuation (the kinsoku rules).
bool no_line_start(char32_t c) {
    static const std::u32string s = U"。，；：！？）」』、》”’．,.;:!?)]}%";
    return s.find(c) != std::u32string::npos;
}
bool no_line_end(char32_t c) {
    static const std::u32string s = U"（「『《“‘([{";
    return s.find(c) != std::u32string::npos;
}
bool wide_cp(char32_t c) {
    if (c < 0x1100) return false;
    std::string s;
    utf8_append(s, c);
    return display_width(s) == 2;
}

// A word (text between spaces) cut where a line may break inside it: only
// where wide characters meet (English words and formulas never split).
std::vector<std::string_view> break_pieces(std::string_view word) {
    std::vector<std::string_view> out;
    size_t start = 0, i = 0;
    char32_t prev = 0;
    bool first = true;
    while (i < word.size()) {
        const size_t at = i;
        const char32_t c = utf8_next(word, i);
        if (!first && (wide_cp(prev) || wide_cp(c)) && !no_line_start(c) && !no_line_end(prev)) {
            out.push_back(word.substr(start, at - start));
            start = at;
        }
        prev = c;
        first = false;
    }
    out.push_back(word.substr(start));
    return out;
}

}  // namespace

// Greedy word wrap on display columns (the prose has √, ᵀ, ·, and Chinese:
// a wide character counts 2 columns, and a line breaks between ideographs).
std::string wrap(std::string_view text, int width, std::string_view indent) {
    std::string out, line;
    int line_w = 0;
    size_t i = 0;
    bool spaced = false;  // a space came before the next word
    while (i < text.size()) {
        if (text[i] == '\n') {  // explicit break
            out += std::string(indent) + line + "\n";
            line.clear();
            line_w = 0;
            spaced = false;
            ++i;
            continue;
        }
        if (text[i] == ' ') {
            spaced = true;
            ++i;
            continue;
        }
        // a word runs to the next space outside square brackets: "[0, 3]" never
        // splits; nor does a short group in parentheses or backticks, "(2, 0, -1)"
        size_t j = i, hold = 0;
        int depth = 0;
        while (j < text.size() && text[j] != '\n' && (text[j] != ' ' || depth > 0 || j < hold)) {
            if (text[j] == '[') ++depth;
            if (text[j] == ']' && depth > 0) --depth;
            if ((text[j] == '(' || text[j] == '`') && j >= hold) {
                const size_t close = text.find(text[j] == '(' ? ')' : '`', j + 1);
                if (close != std::string_view::npos && close - j <= 24 &&
                    text.substr(j + 1, close - j - 1).find_first_of("\n([") == std::string_view::npos)
                    hold = close;
            }
            ++j;
        }
        // a group too wide for a line of its own splits at its spaces after all
        if (display_width(text.substr(i, j - i)) > width - static_cast<int>(indent.size())) {
            const size_t sp = text.find_first_of(" \n", i);
            j = std::min(j, sp == std::string_view::npos ? text.size() : sp);
        }
        bool space_before = spaced;
        for (const std::string_view piece : break_pieces(text.substr(i, j - i))) {
            const int w = display_width(piece);
            const int sep = space_before ? 1 : 0;
            if (line_w > 0 && line_w + sep + w > width - static_cast<int>(indent.size())) {
                out += std::string(indent) + line + "\n";
                line.clear();
                line_w = 0;
            }
            if (line_w > 0 && sep) line += ' ', ++line_w;
            line += piece;
            line_w += w;
            space_before = false;
        }
        spaced = false;
        i = j;
    }
    if (!line.empty()) out += std::string(indent) + line + "\n";
    return out;
}

// Wraps "text" after a first-line prefix; continuation lines get `rest`.
std::string wrap_hanging(std::string_view text, int width, std::string_view first, std::string_view rest) {
    const std::string body = wrap(text, width - static_cast<int>(rest.size()), "");
    std::string out;
    size_t i = 0;
    bool head = true;
    while (i < body.size()) {
        const size_t j = body.find('\n', i);
        out += std::string(head ? first : rest) + body.substr(i, j - i) + "\n";
        head = false;
        i = j + 1;
    }
    return out;
}

// The lines of `text` greedily wrapped at `width` display columns (a word
// longer than the width stays whole on its own line).
std::vector<std::string> wrap_lines(std::string_view text, int width) {
    std::vector<std::string> out;
    const std::string body = wrap(text, std::max(1, width), "");
    size_t i = 0;
    while (i < body.size()) {
        const size_t j = body.find('\n', i);
        out.push_back(body.substr(i, j - i));
        i = j + 1;
    }
    if (out.empty()) out.emplace_back();
    return out;
}

// One line of code or output cut at `width` columns: broken after the last
// space (or, with none, at the width); continuation lines get `cont` more indent.
std::vector<std::string> break_line(std::string_view line, int width, int cont) {
    std::vector<std::string> out;
    std::string rest(line);
    int avail = width;
    while (display_width(rest) > avail) {
        // the longest prefix that fits, preferring a break at a space
        size_t i = 0, fit = 0, space = std::string::npos;
        int w = 0;
        while (i < rest.size()) {
            size_t k = i;
            utf8_next(rest, k);
            w += display_width(std::string_view(rest).substr(i, k - i));
            if (w > avail) break;
            if (rest[i] == ' ') space = i;
            fit = k;
            i = k;
        }
        const size_t cut = space != std::string::npos && space > 0 ? space : std::max<size_t>(fit, 1);
        out.push_back(rest.substr(0, cut));
        size_t from = cut;
        while (from < rest.size() && rest[from] == ' ') ++from;
        rest = std::string(static_cast<size_t>(cont), ' ') + rest.substr(from);
        avail = width;
        if (static_cast<int>(rest.size()) <= cont) break;
    }
    if (!rest.empty() && static_cast<int>(rest.size()) > (out.empty() ? 0 : cont)) out.push_back(rest);
    if (out.empty()) out.emplace_back();
    return out;
}

std::vector<std::string> wrap_text_lines(std::string_view text, int width) { return wrap_lines(text, width); }

}  // namespace attn::lessons
