// The syntax of option values (see parse.hpp).
#include "parse.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn::cli {
namespace {

// "a positive integer", "a non-negative integer" or "an integer in [2, 1048576]".
std::string integer_kind(int64_t min, int64_t max) {
    if (max == kMaxSize && min == 1) return "a positive integer";
    if (max == kMaxSize && min == 0) return "a non-negative integer";
    return fmt::format("an integer in [{}, {}]", min, max);
}

std::string_view trim_spaces(std::string_view s) {
    const size_t first = s.find_first_not_of(' ');
    return first == std::string_view::npos ? std::string_view() : s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// The items between commas, without the spaces around them:
// "1, 16" -> {"1", "16"}, "a,,b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string_view> split_commas(std::string_view text) {
    std::vector<std::string_view> items;
    for (size_t start = 0;;) {
        const size_t comma = text.find(',', start);
        items.push_back(trim_spaces(text.substr(start, comma - start)));
        if (comma == std::string_view::npos) return items;
        start = comma + 1;
    }
}

// `text` as a finite number (strtod's syntax), or nothing.
std::optional<double> read_finite(std::string_view text) {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
    return v;
}

}  // namespace

std::string range_error(int64_t v, int64_t min, int64_t max) {
    if (v >= min && v <= max) return {};
    if (v > max && max == kMaxSize) return fmt::format("must be at most {}, got {}", max, v);
    return fmt::format("must be {}, got {}", integer_kind(min, max), v);
}

std::string read_integer(std::string_view text, int64_t min, int64_t max, int64_t& value) {
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(text.data(), last, value);
    if (ec != std::errc() || end != last)
        return fmt::format("must be {}, got '{}'", integer_kind(min, max), text);
    return range_error(value, min, max);
}

std::vector<std::string> parse_word_list(std::string_view opt, std::string_view text) {
    std::vector<std::string> words;
    for (std::string_view item : split_commas(text)) {
        if (item.empty())
            throw InputError(fmt::format("{}: must be a comma-separated list without empty items, got '{}'", opt, text));
        words.emplace_back(item);
    }
    return words;
}

std::vector<int64_t> parse_int_list(std::string_view opt, std::string_view text, int64_t min, int64_t max) {
    std::vector<int64_t> values;
    for (const std::string& item : parse_word_list(opt, text)) {
        int64_t v = 0;
        if (const std::string why = read_integer(item, min, max, v); !why.empty())
            throw InputError(fmt::format("{}: every item {}", opt, why));
        values.push_back(v);
    }
    return values;
}

Mask parse_mask(std::string_view spec, int64_t B, int64_t T) {
    if (spec == "none") return Mask::none();
    if (spec == "causal") return Mask::make_causal();
    std::string_view rest = spec;
    const bool causal = rest.starts_with("causal+");
    if (causal) rest.remove_prefix(7);
    if (!rest.starts_with("pad:"))
        throw InputError(fmt::format(
            "--mask: unknown mask '{}' (one of: none, causal, pad:L1,L2,..., causal+pad:L1,L2,...)", spec));
    rest.remove_prefix(4);
    std::vector<int64_t> lengths;
    for (std::string_view item : split_commas(rest)) {
        int64_t L = 0;
        if (const std::string why = read_integer(item, 0, T, L); !why.empty())
            throw InputError(fmt::format("--mask: every padding length {} (T = --seq = {})", why, T));
        lengths.push_back(L);
    }
    if (static_cast<int64_t>(lengths.size()) != B)
        throw InputError(fmt::format("--mask: '{}' gives {} padding length(s) but the batch has {} rows (--batch)", spec,
                                     lengths.size(), B));
    const Mask padding = Mask::key_padding(std::move(lengths));
    return causal ? padding.combined(Mask::make_causal()) : padding;
}

Scale parse_scale(std::string_view text) {
    if (text == "sqrt") return {ScaleKind::InvSqrtDk};
    if (text == "none") return {ScaleKind::None};
    if (text == "cosine") return {ScaleKind::Cosine, 1.0f};
    if (text.starts_with("cosine:")) {
        const std::optional<double> tau = read_finite(text.substr(7));
        if (!tau || *tau <= 0)
            throw InputError(fmt::format("--scale: cosine:TAU needs a positive temperature TAU, got '{}'", text));
        return {ScaleKind::Cosine, static_cast<float>(*tau)};
    }
    const std::optional<double> factor = read_finite(text);
    if (!factor)
        throw InputError(fmt::format(
            "--scale: unknown scale '{}' (one of: sqrt, none, a positive NUMBER to multiply by, cosine, cosine:TAU)",
            text));
    if (*factor <= 0) throw InputError(fmt::format("--scale: a constant scale must be positive, got '{}'", text));
    return {ScaleKind::Constant, static_cast<float>(*factor)};
}

float parse_fill(std::string_view text) {
    if (text == "-inf") return -INFINITY;
    const std::optional<double> fill = read_finite(text);
    if (!fill || std::fabs(*fill) > 3.4e38)
        throw InputError(fmt::format("--fill: must be -inf or a finite number such as -1e9 or 0, got '{}'", text));
    return static_cast<float>(*fill);
}

InitSpec parse_init(std::string_view text) {
    if (text == "torch" || text == "default") return {InitKind::Torch};
    if (text == "xavier_uniform" || text == "xavier") return {InitKind::XavierUniform};
    if (text == "xavier_normal") return {InitKind::XavierNormal};
    if (text == "kaiming_uniform" || text == "kaiming") return {InitKind::KaimingUniform};
    if (text == "kaiming_normal") return {InitKind::KaimingNormal};
    if (text == "zeros") return {InitKind::Zeros};
    if (text.starts_with("normal:")) {
        const std::optional<double> sd = read_finite(text.substr(7));
        if (!sd || *sd <= 0.0)
            throw InputError(fmt::format("--init: normal:STD needs a positive finite STD, got '{}'", text));
        return {InitKind::Normal, static_cast<float>(*sd)};
    }
    throw InputError(fmt::format("--init: unknown initialiser '{}' (one of: {})", text, kInitNames));
}

}  // namespace attn::cli
