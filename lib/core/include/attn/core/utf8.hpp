// attn/core/utf8.hpp: UTF-8 <-> code points, with one set of validity rules for
// the whole library (the tokenizer, terminal labels, SVG text).
//
// A sequence is valid when it is well formed (a lead byte and the right number
// of continuation bytes), in its shortest form (no overlongs such as C0 80 for
// NUL), not a surrogate (U+D800..U+DFFF) and at most U+10FFFF. An ill-formed
// sequence decodes to one U+FFFD per maximal subpart (WHATWG, Python's
// errors="replace"): "a\xE4\xB8b" is a, U+FFFD, b (src/utf8.cpp says more).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

// The code point that starts at byte i of s (i < s.size()); advances i past it.
//   for (size_t i = 0; i < s.size();) { const char32_t c = utf8_next(s, i); ... }
char32_t utf8_next(std::string_view s, size_t& i);

// Appends the UTF-8 bytes of c (a code point from utf8_next or the tables).
void utf8_append(std::string& out, char32_t c);

// Whole strings: utf8_next over s; utf8_append over s.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);

}  // namespace attn
