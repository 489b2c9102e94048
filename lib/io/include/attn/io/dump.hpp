// attn/io/dump.hpp: the JSON dump format ("attn-dump", version 1) and safe file output.
//
// {"format": "attn-dump", "version": 1, "config": {...}, "seed": S,
//  "tensors": {NAME: {"shape": [...], "data": [flat, row-major]}}}
// Non-finite floats are written as the bare tokens -Infinity, Infinity, NaN,
// which Python's json module reads back (json.loads("[-Infinity]")); the
// reader here accepts them too.
#pragma once

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

// The dump as JSON text.
std::string dump_to_string(const Dump& d);
// Parses a dump; throws InputError (naming `what`, e.g. the file) on any defect:
// bad JSON, wrong format/version, a shape whose product is not the data length.
Dump dump_from_string(std::string_view text, std::string_view what = "dump");
Dump read_dump_file(const std::string& path);

// JSON with NaN / Infinity / -Infinity tokens accepted (Python's dialect).
// Throws InputError naming `what`.
nlohmann::json parse_json_relaxed(std::string_view text, std::string_view what);
// A float as JSON: shortest round-trip text, or the tokens above.
std::string json_float(float v);
// Appends a tensor's flat data as a JSON array.
void append_json_floats(std::string& out, const float* p, int64_t n);

// Writes `content` to `path` whole or not at all: a temp file in the same
// folder, flushed, then renamed over the target (over the file a symlink points
// to; the link stays). An existing device or FIFO is written in place, never
// replaced; a folder is refused. path "-" writes stdout. TERM, INT and HUP
// (where their action is still the default) remove the temp file, then end the
// process as the signal would have.
// Throws InputError naming the path if it cannot be written.
void write_file_atomic(const std::string& path, std::string_view content);
std::string read_file(const std::string& path);  // throws InputError naming the path

}  // namespace attn
