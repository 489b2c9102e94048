// app/options.hpp: how the subcommands check their options, so every command
// words its errors the same way ("--seq: must be ..."). The syntax of values
// (lists, masks, scales) is in parse.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
// Throws InputError naming both options when two outputs of one command would land in
// the same regular file (through links too): the later write would replace the first.
// Empty paths, "-" and devices (/dev/null) are skipped.
void require_distinct_outputs(std::initializer_list<std::pair<std::string_view, const std::string*>> outputs);
// Physical memory of this machine in bytes (0 if unknown).
double physical_memory_bytes();
// Throws InputError naming `opt` when `bytes` is more than kMemoryHeadroom of
// the memory this process may use (memory.hpp: physical, cgroup, RLIMIT_AS).
void require_fits_in_memory(std::string_view opt, double bytes, std::string_view what);
// The same for reading the dump file `path` (kDumpReadBytesPerFileByte of its size).
void require_dump_fits_in_memory(std::string_view opt, const std::string& path);
// The work budgets above which a long command needs --yes (bench, decode, variants) count an
// exponential as this many FLOPs (a polynomial and a scaling, vectorised).
inline constexpr double kFlopsPerExp = 20;

// Standard output carries one thing. When a machine format goes there (--json,
// --csv, --svg -, --dump -), every other line of the run (tables, --trace,
// notes, "wrote FILE") goes to stderr, so stdout parses as that format; two
// machine formats cannot both have stdout. A command builds one TextOut from
// its claims before any work, then prints its text through it.
struct StdoutClaim {
    std::string option;  // as the user wrote it: "--json", "--svg -"
    bool claims;         // true when this run writes that format to stdout
};
class TextOut {
public:
    // Throws InputError naming both options when two claims are true:
    // "--json and --svg -: both would write to standard output; send one to a file".
    explicit TextOut(const std::vector<StdoutClaim>& claims);
    // True when the text has stdout (no machine format claimed it).
    bool on_stdout() const { return file_ == stdout; }
    FILE* file() const { return file_; }
    std::ostream& stream() const;  // std::cout or std::cerr, as file()
    template <class... A>
    void print(fmt::format_string<A...> f, A&&... args) const {
        fmt::print(file_, f, std::forward<A>(args)...);
    }
    // Colour for the text: only when it goes to stdout (see stdout_color in command.hpp).
    bool color(bool no_color_flag) const;

private:
    FILE* file_ = stdout;
};

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

// Runs `f`, a library call whose InputError reads "FIELD: rule" (a config's validate()),
// and names the option that sets FIELD instead: fields maps the library's field names
// to options ({"lr", "--lr"}); a field the map lacks keeps its name behind `fallback`.
// The rule is written once, in the library; the app only says which flag sets what.
template <class F>
auto with_fields(std::initializer_list<std::pair<std::string_view, std::string_view>> fields, std::string_view fallback,
                 F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const InputError& e) {
        const std::string what = e.what();
        const size_t colon = what.find(": ");
        if (colon != std::string::npos)
            for (const auto& [field, opt] : fields)
                if (what.compare(0, colon, field) == 0) throw InputError(fmt::format("{}{}", opt, what.substr(colon)));
        throw InputError(fmt::format("{}: {}", fallback, what));
    }
}

// CLI11 checks, worded like the errors above (CLI11 puts the option's name first).
// An integer in [min, max]: "--reps: must be a positive integer, got 0".
CLI::Validator integer_in(int64_t min, int64_t max = kMaxSize);
// A seed bound to a uint64_t: digits only, at most 2^64 - 1 (CLI11 would wrap
// "-1" to 2^64 - 1 and clamp 2^64 and above).
CLI::Validator seed_validator();
// For free text (--text, --from, --to), as ->transform(valid_utf8()): each ill-formed
// sequence becomes one U+FFFD per maximal subpart (attn/core/utf8.hpp), as Python's
// errors="replace" reads bytes, so every JSON string written from the text is
// valid UTF-8; the tokenizer then drops U+FFFD, as BERT does. Refuses nothing.
CLI::Validator valid_utf8();
// --json-nonfinite literal|string|null: how the JSON that `output` (the --json
// flag or the --dump option) writes holds -inf, inf and NaN (json_text and
// dump_to_string in attn/io/dump.hpp). Needs `output`: given alone it is refused.
CLI::Option* add_json_nonfinite(CLI::App& sub, JsonNonFinite& v, CLI::Option* output);
// --json [FILE], the same in every command: no value or "-" writes the document to
// stdout (the text of the run then goes to stderr, TextOut); FILE writes it there
// whole or not at all. add_json adds --json and --json-nonfinite (default string:
// strict RFC 8259; docs/formats.md). `what` is the format, e.g. "attn-bench".
struct JsonOut {
    std::string file;  // "" (no value) or "-": stdout
    JsonNonFinite nonfinite = JsonNonFinite::string;
    const CLI::Option* opt = nullptr;
    bool given() const { return opt != nullptr && opt->count() > 0; }
    bool to_stdout() const { return given() && (file.empty() || file == "-"); }
    std::string path() const { return file.empty() ? "-" : file; }
    StdoutClaim claim() const { return {"--json", to_stdout()}; }
};
CLI::Option* add_json(CLI::App& sub, JsonOut& j, std::string_view what);
// --json [FILE] alone, for a command whose --json-nonfinite belongs to its --dump (forward, model
// attention): the result object it writes holds finite numbers only, so it is always strict JSON.
CLI::Option* add_json_result(CLI::App& sub, JsonOut& j, std::string_view what);
// Checked before any work: a --json FILE must be writable.
void require_json_writable(const JsonOut& j);
// Writes the document: "format" and "version" set (kept when the document has
// them), indent 2, the non-finite numbers as j.nonfinite says; stdout or j's file.
template <class J>
void write_json(const JsonOut& j, J doc, std::string_view format, int version);
// A document a library already wrote as text (variance_json, variants_json).
void write_json_text(const JsonOut& j, const std::string& text);

// The vocabulary's --threads and --seed on every command that computes (docs/cli.md, "Commands"):
// make_app calls it after every command's setup. A command that computes and binds no --threads of
// its own gets the shared one: its value bounds the threads of every library call below it
// (attn/core/thread_cap.hpp, applied by apply_threads after the parse). One that draws nothing at
// random gets a --seed that says so. `computes_nothing` names the commands left alone (a list, a
// viewer of files, a server); both options are checked as everywhere (0..1024, 0..2^64-1).
void add_shared_vocabulary(CLI::App& app);
bool computes_nothing(const std::string& command);
// After the parse: a shared --threads N given to the command run bounds the library's threads.
void apply_threads(const CLI::App& app);

// One style of placeholder in every help (docs/cli.md): a value is an upper-case word (N, FILE,
// SEED), a value that may be left out is in brackets ([FILE]), a fixed set of words is a|b|c.
// make_app calls it after every command's setup; CLI11's own names (TEXT, INT, FLOAT, UINT,
// TEXT:{a,b}) are renamed by what the option holds.
void normalise_placeholders(CLI::App& app);
// Words a shell may offer as an option's value (bash and zsh completion): the a|b|c of its
// placeholder, or those given here (mask kinds, backends, tasks).
CLI::Option* offer_values(CLI::Option* opt, std::vector<std::string> values);
std::vector<std::string> offered_values(const CLI::Option& opt);

// An old spelling kept for one release (docs/cli.md, "Deprecated spellings"):
// hidden from --help, it sets the same value, and using it prints one line on
// stderr: "attn: note: --dk is deprecated; use --d-k". Add the new option's
// checks to the returned option as well.
template <class T>
CLI::Option* deprecated_alias(CLI::App& sub, const std::string& old_name, const std::string& new_name, T& value) {
    return sub.add_option(old_name, value, "deprecated spelling of " + new_name)
        ->group("")
        ->each([old_name, new_name](const std::string&) {
            fmt::print(stderr, "attn: note: {} is deprecated; use {}\n", old_name, new_name);
        });
}

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

template <class J>
void write_json(const JsonOut& j, J doc, std::string_view format, int version) {
    if (doc.is_object()) {
        if (!doc.contains("format")) doc["format"] = std::string(format);
        if (!doc.contains("version")) doc["version"] = version;
    }
    write_json_text(j, json_text(doc, 2, j.nonfinite) + "\n");
}

}  // namespace attn::cli
