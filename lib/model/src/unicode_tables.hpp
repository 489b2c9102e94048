// unicode_tables.hpp: the Unicode tables the tokenizers need (internal).
// The data is generated into unicode_tables.cpp by scripts/gen-unicode-tables.py.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace attn::unicode {

struct CodeRange {
    char32_t lo, hi;
};
struct CombiningRun {
    char32_t lo, hi;
    uint8_t cls;
};
struct CodeMapping {
    char32_t cp;
    uint32_t offset;  // into the table's _pool
    uint32_t length;
};

// Whether c lies in one of the n sorted, disjoint ranges r.
inline bool in_ranges(const CodeRange* r, size_t n, char32_t c) {
    const CodeRange* end = r + n;
    const CodeRange* it = std::upper_bound(r, end, c, [](char32_t v, const CodeRange& x) { return v < x.lo; });
    return it != r && (it - 1)->hi >= c;
}

extern const CodeRange kWhitespace[], kOther[], kPunctuation[], kNonspacingMark[], kLetter[], kNumber[];
extern const size_t kWhitespace_size, kOther_size, kPunctuation_size, kNonspacingMark_size, kLetter_size, kNumber_size;
extern const CombiningRun kCombining[];
extern const size_t kCombining_size;
extern const char32_t kDecomposition_pool[], kLowercase_pool[];
extern const CodeMapping kDecomposition[], kLowercase[];
extern const size_t kDecomposition_size, kLowercase_size;

}  // namespace attn::unicode
