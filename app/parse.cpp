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

// `text` as a finite number (strtod's syntax), or nothing.
std::optional<double> read_finite(std::string_view text) {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
    return v;
}

// `text` as a number in [min, max], converted to float, or nothing. The bounds
// are checked on the double, before the conversion (a double beyond the float
// range has no float value), and the bounds themselves are normal floats.
std::optional<float> read_float_in(std::string_view text, double min, double max) {
    const std::optional<double> v = read_finite(text);
    if (!v || *v < min || *v > max) return std::nullopt;
    return static_cast<float>(*v);
}

}  // namespace

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

std::string range_error(int64_t v, int64_t min, int64_t max) {
    if (v >= min && v <= max) return {};
    if (v > max && max == kMaxSize) return fmt::format("must be at most {}, got {}", max, v);
    return fmt::format("must be {}, got {}", integer_kind(min, max), v);
}

std::string read_integer(std::string_view text, int64_t min, int64_t max, int64_t& value) {
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(text.data(), last, value);
    // "-0" is no way to write 0: a sign slipped in (`--heads 0.-0`)
    if (ec != std::errc() || end != last || (value == 0 && text.starts_with('-')))
        return fmt::format("must be {}, got '{}'", integer_kind(min, max), text);
    return range_error(value, min, max);
}

std::vector<std::string> parse_word_list(std::string_view opt, std::string_view text) {
    std::vector<std::string> words;
    for (std::string_view item : split_commas(text)) {
        if (item.empty())
            throw InputError(
                fmt::format("{}: must be a comma-separated list without empty items, got '{}'", opt, text));
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
    // The sparse patterns (C42): window:W, window-causal:W, strided:S, strided-causal:S,
    // global-local:G,W, global-local-causal:G,W.
    for (const std::string_view kind : {"window", "strided", "global-local"}) {
        for (const bool causal : {false, true}) {
            const std::string head = fmt::format("{}{}:", kind, causal ? "-causal" : "");
            if (!spec.starts_with(head)) continue;
            const std::string_view arg = spec.substr(head.size());
            const bool two = kind == "global-local";
            const std::vector<int64_t> n = parse_int_list("--mask", arg, two ? 0 : 1, kMaxSize);
            if (n.size() != (two ? 2u : 1u))
                throw InputError(fmt::format("--mask: '{}' needs {} after '{}', got '{}'", spec,
                                             two ? "two numbers G,W (global tokens, window width)" : "one number", head,
                                             arg));
            if (kind == "window") return Mask::sliding_window(n[0], causal);
            if (kind == "strided") return Mask::strided(n[0], causal);
            return Mask::global_local(n[0], n[1], causal);
        }
    }
    std::string_view rest = spec;
    const bool causal = rest.starts_with("causal+");
    if (causal) rest.remove_prefix(7);
    if (!rest.starts_with("pad:"))
        throw InputError(fmt::format(
            "--mask: unknown mask '{}' (one of: none, causal, pad:L1,L2,..., causal+pad:L1,L2,..., window:W, "
            "window-causal:W, strided:S, strided-causal:S, global-local:G,W, global-local-causal:G,W)",
            spec));
    rest.remove_prefix(4);
    std::vector<int64_t> lengths;
    for (std::string_view item : split_commas(rest)) {
        int64_t L = 0;
        if (const std::string why = read_integer(item, 0, T, L); !why.empty())
            throw InputError(
                fmt::format("--mask: every padding length {} (the keys, Tk = {}: --tk, or --seq without it)", why, T));
        lengths.push_back(L);
    }
    if (static_cast<int64_t>(lengths.size()) != B)
        throw InputError(fmt::format("--mask: '{}' gives {} padding length(s) but the batch has {} rows (--batch)",
                                     spec, lengths.size(), B));
    const Mask padding = Mask::key_padding(std::move(lengths));
    return causal ? padding.combined(Mask::make_causal()) : padding;
}

Scale parse_scale(std::string_view text) {
    if (text == "sqrt") return {ScaleKind::InvSqrtDk};
    if (text == "none") return {ScaleKind::None};
    if (text == "cosine") return {ScaleKind::Cosine, 1.0f};
    if (text.starts_with("cosine:")) {
        const std::optional<float> tau = read_float_in(text.substr(7), kMinScale, kMaxScale);
        if (!tau)
            throw InputError(fmt::format("--scale: cosine:TAU needs a temperature TAU in [{:g}, {:g}], got '{}'",
                                         kMinScale, kMaxScale, text));
        return {ScaleKind::Cosine, *tau};
    }
    if (!read_finite(text))
        throw InputError(fmt::format(
            "--scale: unknown scale '{}' (one of: sqrt, none, a positive NUMBER to multiply by, cosine, cosine:TAU)",
            text));
    const std::optional<float> factor = read_float_in(text, kMinScale, kMaxScale);
    if (!factor)
        throw InputError(fmt::format("--scale: a constant scale must be in [{:g}, {:g}], got '{}'", kMinScale,
                                     kMaxScale, text));
    return {ScaleKind::Constant, *factor};
}

float parse_fill(std::string_view text) {
    if (text == "-inf") return -INFINITY;
    const std::optional<float> fill = read_float_in(text, -kMaxFill, kMaxFill);
    if (!fill)
        throw InputError(fmt::format("--fill: must be -inf or a number in [{:g}, {:g}] such as -1e9 or 0, got '{}'",
                                     -kMaxFill, kMaxFill, text));
    return *fill;
}

InitSpec parse_init(std::string_view text) {
    if (text == "torch" || text == "default") return {InitKind::Torch};
    if (text == "xavier_uniform" || text == "xavier") return {InitKind::XavierUniform};
    if (text == "xavier_normal") return {InitKind::XavierNormal};
    if (text == "kaiming_uniform" || text == "kaiming") return {InitKind::KaimingUniform};
    if (text == "kaiming_normal") return {InitKind::KaimingNormal};
    if (text == "zeros") return {InitKind::Zeros};
    if (text.starts_with("normal:")) {
        const std::optional<float> sd = read_float_in(text.substr(7), kMinInitStd, kMaxInitStd);
        if (!sd)
            throw InputError(fmt::format("--init: normal:STD needs a STD in [{:g}, {:g}], got '{}'", kMinInitStd,
                                         kMaxInitStd, text));
        return {InitKind::Normal, *sd};
    }
    throw InputError(fmt::format("--init: unknown initialiser '{}' (one of: {})", text, kInitNames));
}

}  // namespace attn::cli
