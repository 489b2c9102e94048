// UTF-8 decoding and encoding (see attn/core/utf8.hpp for the validity rules).
// An ill-formed sequence decodes to one U+FFFD per maximal subpart, as the WHATWG decoder,
// Python's errors="replace" and Unicode's recommended practice do: a lead byte and the
// continuation bytes that could still have completed it make one U+FFFD ("a\xE4\xB8b" is
// a, U+FFFD, b); a byte that can start nothing makes one alone.
#include "attn/core/utf8.hpp"

namespace attn {

char32_t utf8_next(std::string_view s, size_t& i) {
    constexpr char32_t kReplacement = 0xFFFD;
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return ++i, b0;
    // The lead byte sets the length and the range its first continuation byte must lie in: that
    // range is what rules out overlong forms (E0, F0), surrogates (ED) and values past U+10FFFF (F4).
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) len = 2;
    else if (b0 >= 0xE0 && b0 <= 0xEF) len = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    else if (b0 >= 0xF0 && b0 <= 0xF4) len = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (len == 0) return ++i, kReplacement;  // 80..C1, F5..FF never start a sequence
    char32_t cp = b0 & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    size_t k = 1;
    for (; k < len && i + k < s.size(); ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if (b < lo || b > hi) break;
        cp = (cp << 6) | (b & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    i += k;  // the whole sequence, or its maximal subpart: the bytes that could still have begun one
    return k == len ? cp : kReplacement;
}

void utf8_append(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::u32string utf8_decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) out.push_back(utf8_next(s, i));
    return out;
}

std::string utf8_encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) utf8_append(out, c);
    return out;
}

}  // namespace attn
