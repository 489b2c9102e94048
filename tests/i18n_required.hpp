// tests/i18n_required.hpp: the parts of the tour whose Chinese must be complete,
// the one list translators extend (lessons/zh/README.md). kFramingPart (0) is the
// framing: the context's own words, run header and footer, `attn lessons`, the
// tour's introduction and summary, the claim texts. The others are lesson numbers.
// test_i18n.cpp fails on any missing text of these parts; test_tour.cpp checks
// that their Chinese text fits 80 display columns.
#pragma once

#include <vector>

#include "catalogue.hpp"

namespace attn::test {

inline const std::vector<int> kRequiredZh{
    attn::lessons::kFramingPart, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};

}  // namespace attn::test
