// app/options.hpp: how the subcommands check their options, so every command
// words its errors the same way ("--seq: must be ..."). The syntax of values
// (lists, masks, scales) is in parse.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "parse.hpp"

namespace attn::cli {

// Throws InputError naming `opt` unless `path` ("-" = stdout) can be created:
// its folder exists and is writable and the path is not a folder. Checked
// before any work so a long run never ends in an unwritable file.
void require_writable(std::string_view opt, const std::string& path);
// Physical memory of this machine in bytes (0 if unknown).
double physical_memory_bytes();
// Throws InputError naming `opt` when `bytes` would not fit in memory.
void require_fits_in_memory(std::string_view opt, double bytes, std::string_view what);

// Runs `f`, a library call that checks the value of option `opt`, and puts
// the option's name in front of any InputError it throws: the library words
// "d_model 16 is not divisible by 3 heads", the user reads "--heads: d_model ...".
template <class F>
auto with_option(std::string_view opt, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", opt, e.what()));
    }
}

// CLI11 checks, worded like the errors above (CLI11 puts the option's name first).
// An integer in [min, max]: "--reps: must be a positive integer, got 0".
CLI::Validator integer_in(int64_t min, int64_t max = kMaxSize);
// A seed bound to a uint64_t: digits only, at most 2^64 - 1 (CLI11 would wrap
// "-1" to 2^64 - 1 and clamp 2^64 and above).
CLI::Validator seed_validator();
// For free text (--text, --from, --to), as ->transform(valid_utf8()): each byte
// that does not start a valid UTF-8 sequence becomes U+FFFD (attn/core/utf8.hpp),
// as a lossy decoder reads bytes, so every JSON string written from the text is
// valid UTF-8; the tokenizer then drops U+FFFD, as BERT does. Refuses nothing.
CLI::Validator valid_utf8();
// --json-nonfinite literal|string|null, for a command whose --dump holds tensors.
void add_json_nonfinite(CLI::App& sub, JsonNonFinite& v);
// For an option bound to an enum, as ->transform(one_of(...)): takes the name
// `name(v)` of each of `values` and stores v; refuses any other word with
// "must be one of a, b, c, got 'x'".
template <class E>
CLI::Validator one_of(std::vector<E> values, const char* (*name)(E)) {
    std::string names;
    for (E v : values) names += fmt::format("{}{}", names.empty() ? "" : ", ", name(v));
    return CLI::Validator(
        [values, name, names](std::string& text) {
            for (E v : values)
                if (text == name(v)) {
                    text = std::to_string(static_cast<std::underlying_type_t<E>>(v));
                    return std::string();
                }
            return fmt::format("must be one of {}, got '{}'", names, text);
        },
        "");
}

}  // namespace attn::cli
