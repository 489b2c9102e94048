// Tests of the library's one UTF-8 decoder (attn/core/utf8.hpp), which the
// tokenizer and the heatmap/SVG text both use.
#include <doctest/doctest.h>

#include <string>

#include "attn/core/utf8.hpp"

TEST_CASE("utf8: round trip of 1- to 4-byte characters, at every length boundary") {
    const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";  // a é 中 😀
    const std::u32string u = attn::utf8_decode(s);
    CHECK(u == std::u32string{U'a', 0xE9, 0x4E2D, 0x1F600});
    CHECK(attn::utf8_encode(u) == s);
    const std::u32string edges{0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
    const std::string bytes = attn::utf8_encode(edges);
    CHECK(bytes.size() == 1 + 2 + 2 + 3 + 3 + 3 + 3 + 4 + 4);
    CHECK(attn::utf8_decode(bytes) == edges);
}

TEST_CASE("utf8: utf8_next steps over one character, or over one bad byte") {
    const std::string s = "\xE4\xB8\xAD" "\xFF" "x";
    size_t i = 0;
    CHECK(attn::utf8_next(s, i) == 0x4E2D);
    CHECK(i == 3);
    CHECK(attn::utf8_next(s, i) == 0xFFFD);
    CHECK(i == 4);
    CHECK(attn::utf8_next(s, i) == U'x');
    CHECK(i == 5);
}

TEST_CASE("utf8: an ill-formed sequence is one U+FFFD per maximal subpart (WHATWG, Python errors=replace)") {
    const char32_t R = 0xFFFD;
    auto reps = [](size_t n) { return std::u32string(n, 0xFFFD); };
    CHECK(attn::utf8_decode("a\xE4\xB8" "b") == std::u32string{U'a', R, U'b'});  // a truncated 3-byte sequence
    CHECK(attn::utf8_decode("\xFF") == reps(1));                      // never a lead byte
    CHECK(attn::utf8_decode("\x80") == reps(1));                      // a stray continuation byte
    CHECK(attn::utf8_decode("\xC0\x80") == reps(2));                  // overlong NUL: C0 starts nothing
    CHECK(attn::utf8_decode("\xE0\x80\xAF") == reps(3));              // overlong '/': 80 cannot follow E0
    CHECK(attn::utf8_decode("\xF0\x80\x80\x80") == reps(4));          // overlong, 4 bytes
    CHECK(attn::utf8_decode("\xED\xA0\x80") == reps(3));              // a surrogate, U+D800
    CHECK(attn::utf8_decode("\xF4\x90\x80\x80") == reps(4));          // U+110000, past the last code point
    CHECK(attn::utf8_decode("\xF8\x88\x80\x80\x80").size() == 5);    // 5-byte forms do not exist
    CHECK(attn::utf8_decode("\xC3" "a") == std::u32string{R, U'a'});
    CHECK(attn::utf8_decode("\xE4\xB8") == reps(1));                  // truncated at the end: one
    CHECK(attn::utf8_decode("\xF0\x9F\x98") == reps(1));
    CHECK(attn::utf8_decode("\xFF" "a\xC3") == std::u32string{R, U'a', R});
    size_t i = 1;  // utf8_next steps over the maximal subpart and no further
    CHECK(attn::utf8_next("a\xE4\xB8" "b", i) == R);
    CHECK(i == 3);
}

// The Unicode Standard's examples of U+FFFD substitution (chapter 3, "U+FFFD Substitution of Maximal
// Subparts", tables 3-8 to 3-11); each expected string is what Python's bytes.decode("utf-8", "replace")
// gives for the same bytes.
TEST_CASE("utf8: Unicode's table of ill-formed sequences, substituted as recommended") {
    const char32_t R = 0xFFFD;
    // non-shortest forms: every byte alone
    CHECK(attn::utf8_decode("\x61\xC0\xAF\xE0\x80\xBF\xF0\x80\x80\xAF\x41") ==
          std::u32string{U'a', R, R, R, R, R, R, R, R, R, U'A'});
    // surrogates: ED then a byte above 9F is not a maximal subpart
    CHECK(attn::utf8_decode("\x61\xED\xA0\x80\xED\xBF\xBF\x62") == std::u32string{U'a', R, R, R, R, R, R, U'b'});
    // other ill-formed sequences: past U+10FFFF, FF, stray continuation bytes
    CHECK(attn::utf8_decode("\x61\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42") ==
          std::u32string{U'a', R, R, R, R, R, U'A', R, R, U'B'});
    // truncated sequences: each maximal subpart is one U+FFFD
    CHECK(attn::utf8_decode("\x61\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41") == std::u32string{U'a', R, R, R, R, U'A'});
}
