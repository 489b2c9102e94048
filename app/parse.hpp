// app/parse.hpp: the syntax of option values, turned into the library's value
// types: `--mask causal+pad:4,6` into a Mask, `--scale cosine:0.5` into a Scale,
// `--seq 1024,4096` into integers. The library never sees this text. Errors
// are InputErrors whose message names the option ("--mask: ...").
//
// Built as its own library (attn_cli_parse) because the tests read fixtures
// whose configuration is written in this syntax (tests/fixtures/golden).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"
#include "attn/core/mask.hpp"

namespace attn::cli {

// The largest size an option takes (2^31 - 1): no product of a few sizes can overflow.
inline constexpr int64_t kMaxSize = 2147483647;

// Why `v` is not an integer in [min, max] ("must be a positive integer, got 0"), or "" when it is.
std::string range_error(int64_t v, int64_t min, int64_t max = kMaxSize);
// Reads `text` as an integer in [min, max] into `value`. Returns why it is not
// one ("must be a positive integer, got 'x'"), or "" when it is.
std::string read_integer(std::string_view text, int64_t min, int64_t max, int64_t& value);

// The items between commas, without the spaces around them: "1, 16" -> {"1", "16"},
// "a,,b" -> {"a", "", "b"}, "" -> {""}. The views point into `text`.
std::vector<std::string_view> split_commas(std::string_view text);
// "a,b" -> {"a", "b"}; refuses an empty list and empty items ("a,,b"). Errors name `opt`.
std::vector<std::string> parse_word_list(std::string_view opt, std::string_view text);
// "1,16,64" -> {1, 16, 64}: a word list of integers in [min, max]. Errors name `opt`.
std::vector<int64_t> parse_int_list(std::string_view opt, std::string_view text, int64_t min = 1,
                                    int64_t max = kMaxSize);

// --mask: none | causal | pad:L1,L2,... | causal+pad:L1,L2,... for a batch of B
// rows of T keys: one length per batch row, each in [0, T] (0 leaves a row with
// no key at all, allowed on purpose).
Mask parse_mask(std::string_view spec, int64_t B, int64_t T);

// The ranges of the numbers in --scale, --fill and --init. Each bound is a
// normal float, so a value in range is never 0, subnormal or infinite once
// converted to float, and scores of realistic size (|q.k| up to ~1e30) times
// a scale stay finite: a value outside is refused, never turned into NaN.
inline constexpr double kMinScale = 1e-6, kMaxScale = 1e6;  // constant scale and cosine's TAU
inline constexpr double kMaxFill = 1e30;                      // |fill|, when it is not -inf
inline constexpr double kMinInitStd = 1e-6, kMaxInitStd = 100;  // normal:STD

// --scale: sqrt (1/sqrt(Dk)) | none | a NUMBER in [kMinScale, kMaxScale] to
// multiply by | cosine | cosine:TAU with TAU in [kMinScale, kMaxScale].
Scale parse_scale(std::string_view text);

// --fill: -inf or a number in [-kMaxFill, kMaxFill] such as -1e9 or 0.
float parse_fill(std::string_view text);

// --init: torch (or default), xavier_uniform (or xavier), xavier_normal,
// kaiming_uniform (or kaiming), kaiming_normal, normal:STD (STD in
// [kMinInitStd, kMaxInitStd]), zeros.
InitSpec parse_init(std::string_view text);
inline constexpr const char* kInitNames =
    "torch, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, normal:STD, zeros";

}  // namespace attn::cli
