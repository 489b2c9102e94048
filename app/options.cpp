// Shared option checks (see options.hpp).
#include "options.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "attn/core/cost.hpp"
#include "attn/core/utf8.hpp"
#include "command.hpp"
#include "memory.hpp"

namespace attn::cli {

void require_writable(std::string_view opt, const std::string& path) {
    if (path == "-") return;
    if (path.empty()) throw InputError(fmt::format("{}: the file name is empty", opt));
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError(fmt::format("{}: '{}' is a folder, not a file", opt, path));
    // An existing device or FIFO (/dev/null, /dev/stdout, >(cmd)) is written in place: only it must be writable.
    if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (access(path.c_str(), W_OK) != 0)
            throw InputError(fmt::format("{}: cannot write '{}' ({})", opt, path, std::strerror(errno)));
        return;
    }
    // Through a symlink, the folder that matters is the one of the file it points to.
    const std::string target = with_option(opt, [&] { return write_target(path); });
    fs::path dir = fs::path(target).parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::is_directory(dir, ec))
        throw InputError(fmt::format("{}: cannot write '{}': folder '{}' does not exist", opt, path, dir.string()));
    if (access(dir.c_str(), W_OK) != 0)
        throw InputError(fmt::format("{}: cannot write '{}': folder '{}' is not writable", opt, path, dir.string()));
}

void require_distinct_outputs(std::initializer_list<std::pair<std::string_view, const std::string*>> outputs) {
    namespace fs = std::filesystem;
    std::vector<std::pair<std::string_view, std::string>> seen;  // option, resolved file
    for (const auto& [opt, path] : outputs) {
        if (path->empty() || *path == "-") continue;
        if (struct stat st {}; ::stat(path->c_str(), &st) == 0 && !S_ISREG(st.st_mode)) continue;
        std::error_code ec;
        const fs::path resolved =
            fs::weakly_canonical(fs::absolute(with_option(opt, [p = path] { return write_target(*p); })), ec);
        const std::string file = ec ? *path : resolved.string();
        for (const auto& [other, f] : seen)
            if (f == file)
                throw InputError(
                    fmt::format("{}: '{}' is also the file of {}; give each output its own file", opt, *path, other));
        seen.emplace_back(opt, file);
    }
}

TextOut::TextOut(const std::vector<StdoutClaim>& claims) {
    const StdoutClaim* first = nullptr;
    for (const StdoutClaim& c : claims) {
        if (!c.claims) continue;
        if (first != nullptr)
            throw InputError(fmt::format("{} and {}: both would write to standard output; send one to a file",
                                         first->option, c.option));
        first = &c;
    }
    if (first != nullptr) file_ = stderr;
}

std::ostream& TextOut::stream() const { return on_stdout() ? std::cout : std::cerr; }

bool TextOut::color(bool no_color_flag) const { return on_stdout() && stdout_color(no_color_flag); }

CLI::Validator integer_in(int64_t min, int64_t max) {
    return CLI::Validator(
        [min, max](std::string& text) {
            int64_t value = 0;
            return read_integer(text, min, max, value);
        },
        "");
}

CLI::Validator seed_validator() {
    return CLI::Validator(
        [](std::string& text) {
            uint64_t seed = 0;
            const char* last = text.data() + text.size();
            const auto [end, ec] = std::from_chars(text.data(), last, seed);
            // from_chars takes no sign, so "-1" fails here instead of wrapping to 2^64 - 1;
            // 2^64 and above are out of range instead of clamped.
            if (ec != std::errc() || end != last)
                return fmt::format("must be an integer in [0, {}], got '{}'", UINT64_MAX, text);
            return std::string();
        },
        "SEED");
}

CLI::Validator valid_utf8() {
    return CLI::Validator(
        [](std::string& v) {
            v = utf8_encode(utf8_decode(v));
            return std::string();
        },
        "");
}

CLI::Option* add_json_nonfinite(CLI::App& sub, JsonNonFinite& v, CLI::Option* output) {
    v = JsonNonFinite::string;  // strict RFC 8259 unless asked (docs/formats.md)
    return sub
        .add_option("--json-nonfinite", v,
                    fmt::format("-inf, inf, NaN in {}'s JSON: string (\"-Infinity\", strict), literal (-Infinity, "
                                "Python) or null; see docs/formats.md",
                                output->get_name()))
        ->type_name("MODE")
        ->default_str(json_nonfinite_name(v))
        ->transform(one_of({JsonNonFinite::literal, JsonNonFinite::string, JsonNonFinite::null}, json_nonfinite_name))
        ->needs(output);
}

CLI::Option* add_json(CLI::App& sub, JsonOut& j, std::string_view what) {
    CLI::Option* opt =
        sub.add_option("--json", j.file,
                       fmt::format("machine-readable output ({} JSON) to stdout, or to FILE (written whole)", what))
            ->expected(0, 1)
            ->type_name("[FILE]");
    j.opt = opt;
    add_json_nonfinite(sub, j.nonfinite, opt);
    return opt;
}

CLI::Option* add_json_result(CLI::App& sub, JsonOut& j, std::string_view what) {
    CLI::Option* opt = sub.add_option("--json", j.file,
                                      fmt::format("the result ({} JSON) to stdout, or to FILE (written whole)", what))
                           ->expected(0, 1)
                           ->type_name("[FILE]");
    j.opt = opt;
    return opt;
}

void require_json_writable(const JsonOut& j) {
    if (j.given() && !j.to_stdout()) require_writable("--json", j.path());
}

void write_json_text(const JsonOut& j, const std::string& text) {
    if (j.to_stdout()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return;
    }
    with_option("--json", [&] { write_file_atomic(j.path(), text); });
}

double physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

void require_fits_in_memory(std::string_view opt, double bytes, std::string_view what) {
    const MemoryLimit limit = memory_limit_here();
    if (limit.bytes > 0 && bytes > kMemoryHeadroom * limit.bytes)
        throw InputError(fmt::format("{}: {} would need {}, more than {:.0f}% of the {} this process may use ({})", opt,
                                     what, format_bytes(bytes), 100 * kMemoryHeadroom, format_bytes(limit.bytes),
                                     limit.source));
}

void require_dump_fits_in_memory(std::string_view opt, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // the reader names what is wrong
    const double size = static_cast<double>(st.st_size);
    require_fits_in_memory(
        opt, kProgramBytes + kDumpReadBytesPerFileByte * size,
        fmt::format("reading {} ({} of JSON)", opt == path ? "it" : "'" + path + "'", format_bytes(size)));
}

}  // namespace attn::cli
