// app/options.hpp: how the subcommands check their options, so every command
// words its errors the same way ("--seq: must be ..."). The syntax of values
// (lists, masks, scales) is in parse.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "parse.hpp"

namespace attn::cli {

// Throws InputError("OPT: must be a positive integer, got V") unless v > 0,
// and refuses sizes above kMaxSize.
void require_positive(std::string_view opt, int64_t v);
// Throws InputError naming `opt` unless `path` ("-" = stdout) can be created:
// its folder exists and is writable and the path is not a folder. Checked
// before any work so a long run never ends in an unwritable file.
void require_writable(std::string_view opt, const std::string& path);
// For --seed bound to a uint64_t: CLI11 would silently wrap "-1" to 2^64-1;
// this validator refuses any sign so the error names the option instead.
CLI::Validator seed_validator();
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

}  // namespace attn::cli
