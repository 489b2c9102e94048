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

TEST_CASE("utf8: each byte of an invalid sequence becomes one U+FFFD") {
    const std::u32string R1{0xFFFD}, R2{0xFFFD, 0xFFFD}, R3{0xFFFD, 0xFFFD, 0xFFFD}, R4{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD};
    CHECK(attn::utf8_decode("\xFF") == R1);                          // never a lead byte
    CHECK(attn::utf8_decode("\x80") == R1);                          // a stray continuation byte
    CHECK(attn::utf8_decode("\xC0\x80") == R2);                      // overlong NUL
    CHECK(attn::utf8_decode("\xE0\x80\xAF") == R3);                  // overlong '/'
    CHECK(attn::utf8_decode("\xF0\x80\x80\x80") == R4);              // overlong, 4 bytes
    CHECK(attn::utf8_decode("\xED\xA0\x80") == R3);                  // a surrogate, U+D800
    CHECK(attn::utf8_decode("\xF4\x90\x80\x80") == R4);              // U+110000, past the last code point
    CHECK(attn::utf8_decode("\xF8\x88\x80\x80\x80").size() == 5);    // 5-byte forms do not exist
    // a truncated sequence: the lead byte is bad, what follows is read afresh
    CHECK(attn::utf8_decode("\xC3" "a") == std::u32string{0xFFFD, U'a'});
    CHECK(attn::utf8_decode("\xE4\xB8") == R2);
    CHECK(attn::utf8_decode("\xFF" "a\xC3") == std::u32string{0xFFFD, U'a', 0xFFFD});
}
