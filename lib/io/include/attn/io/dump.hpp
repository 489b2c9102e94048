// attn/io/dump.hpp: the JSON dump format ("attn-dump", version 1) and safe file output.
//
// {"format": "attn-dump", "version": 1, "config": {...}, "seed": S,
//  "tensors": {NAME: {"shape": [...], "data": [flat, row-major]}}}
// Non-finite floats (the -inf a mask fills in) are written as JsonNonFinite says:
// by default the bare tokens -Infinity, Infinity, NaN, which Python's json module
// reads back (json.loads("[-Infinity]")) but JavaScript's JSON.parse and strict
// RFC 8259 parsers refuse; or as the strings "-Infinity", "Infinity", "NaN"; or as
// null, which loses the value (read back as NaN). The reader here accepts all three.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "attn/core/tensor.hpp"

namespace attn {

struct Dump {
    std::string format = "attn-dump";
    int version = 1;
    nlohmann::json config = nlohmann::json::object();
    uint64_t seed = 0;
    std::map<std::string, Tensor> tensors;  // written in the order `order` gives, then the rest
    std::vector<std::string> order;
};

// How a non-finite float is written: -Infinity, "-Infinity", or null.
enum class JsonNonFinite { literal, string, null };
const char* json_nonfinite_name(JsonNonFinite v);  // "literal", "string", "null"

// The most bytes one float takes in a dump's text: the longest shortest-round-trip
// float ("-1.1754944e-38", 14 characters) or "\"-Infinity\"" (11), and ", ".
// dump_to_string reserves this much a float once, so the text never grows by copying.
inline constexpr double kJsonBytesPerFloat = 16;
// Memory reading a dump takes, per byte of its file, at the peak: the text, its
// copy with NaN/Infinity quoted, the parsed JSON values (16 bytes each plus the
// arrays'), and the tensors. Measured with VmHWM in tests/test_memory.cpp.
inline constexpr double kDumpReadBytesPerFileByte = 5;

// The dump as JSON text.
std::string dump_to_string(const Dump& d, JsonNonFinite nonfinite = JsonNonFinite::literal);
// Parses a dump; throws InputError (naming `what`, e.g. the file) on any defect:
// bad JSON, wrong format/version, a shape whose product is not the data length.
// A data entry may be a number, one of the tokens or strings NaN, Infinity,
// -Infinity, or null (NaN).
Dump dump_from_string(std::string_view text, std::string_view what = "dump");
Dump read_dump_file(const std::string& path);

// The deepest nesting of JSON arrays and objects parse_json_relaxed accepts.
// Untrusted text is checked before parsing, so it cannot drive deep recursion
// (parsing, copying or printing a value 200,000 levels deep overflows the stack).
inline constexpr int kMaxJsonDepth = 64;
// Largest nesting of [ and { outside strings; stops counting past `cap`.
int json_depth(std::string_view text, int cap);
// JSON with NaN / Infinity / -Infinity tokens accepted (Python's dialect),
// nested at most kMaxJsonDepth deep. Throws InputError naming `what`.
nlohmann::json parse_json_relaxed(std::string_view text, std::string_view what);
// A float as JSON: shortest round-trip text, or a non-finite one as `nonfinite` says.
std::string json_float(float v, JsonNonFinite nonfinite = JsonNonFinite::literal);
// A JSON value (nlohmann::json or ordered_json) as text, laid out as its
// dump(indent) would be (-1: compact; N: N spaces a level), but with every
// non-finite float written as `nonfinite` says: nlohmann writes them all as
// null, which loses the value and cannot be told from a missing one. Every
// JSON writer of attn (--json, --dump) goes through this or dump_to_string.
template <class J>
std::string json_text(const J& j, int indent = -1, JsonNonFinite nonfinite = JsonNonFinite::literal);
// Appends a tensor's flat data as a JSON array.
void append_json_floats(std::string& out, const float* p, int64_t n, JsonNonFinite nonfinite = JsonNonFinite::literal);

// Writes `content` to `path` whole or not at all: a temp file ".attn.XXXXXX" in
// the target's folder (short, so a legal 255-byte name still works), flushed,
// then renamed over the target. Through a symlink the file it points to is
// replaced, or created when the link dangles (as `cat > link` would); the link
// stays. An existing device or FIFO is written in place, never replaced; a
// folder is refused. path "-" writes stdout. TERM, INT and HUP (where their
// action is still the default) remove the temp file, then end the process as
// the signal would have; they are held while the temp file is created and
// named, and from the rename on, so no signal can leave one behind.
// Throws InputError naming the path if it cannot be written.
void write_file_atomic(const std::string& path, std::string_view content);
// The start of write_file_atomic's temp file names (".attn.XXXXXX", beside the target):
// what tests look for to prove nothing was left behind.
inline constexpr std::string_view kTempFilePrefix = ".attn.";
// The file write_file_atomic(path) lands in: `path`, or through symlinks the file
// they point to (which may not exist yet). Throws InputError naming `path` on a
// loop of links.
std::string write_target(const std::string& path);
std::string read_file(const std::string& path);  // throws InputError naming the path

namespace detail {
template <class J>
void append_json(std::string& out, const J& j, int indent, int depth, JsonNonFinite nonfinite) {
    auto newline = [&](int d) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent) * static_cast<size_t>(d), ' ');
    };
    if (j.is_object() || j.is_array()) {
        const bool object = j.is_object();
        if (j.empty()) {
            out += object ? "{}" : "[]";
            return;
        }
        out += object ? '{' : '[';
        bool first = true;
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (!first) out += ',';
            first = false;
            newline(depth + 1);
            if (object) {
                out += J(it.key()).dump();
                out += indent >= 0 ? ": " : ":";
            }
            append_json(out, *it, indent, depth + 1, nonfinite);
        }
        newline(depth);
        out += object ? '}' : ']';
    } else if (j.is_number_float() && !std::isfinite(j.template get<double>())) {
        out += json_float(static_cast<float>(j.template get<double>()), nonfinite);  // NaN and +-inf stay so as floats
    } else {
        out += j.dump();
    }
}
}  // namespace detail

template <class J>
std::string json_text(const J& j, int indent, JsonNonFinite nonfinite) {
    std::string out;
    detail::append_json(out, j, indent, 0, nonfinite);
    return out;
}

}  // namespace attn
