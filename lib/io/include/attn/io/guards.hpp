// attn/io/guards.hpp: the checks every reader and writer of attn runs, in one place:
// JSON nesting depth before parsing, the values of weights read, what a path that is no
// regular file is, and a run's outputs held back until all of them are written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "attn/core/tensor.hpp"
#include "attn/io/dump.hpp"  // kMaxJsonDepth, json_depth

namespace attn {

// Throws InputError "WHAT: JSON nested deeper than 64 levels" when `text` nests arrays and
// objects deeper than kMaxJsonDepth (brackets inside strings do not count). Every reader of
// JSON calls it (or parse_json_relaxed, which does) before parsing text it did not write.
void check_json_depth(std::string_view text, std::string_view what);
// Standard JSON (no NaN tokens), its depth checked first; InputError naming `what`.
nlohmann::json parse_json(std::string_view text, std::string_view what);
// What keeps `path` from being a file read_file reads, in the words that follow its name: ""
// when it is a regular file (through links), else "is missing" (a dangling link included),
// "is a folder, not a file", or "is not a regular file (a FIFO, a device or a socket)".
std::string file_kind_problem(const std::string& path);

// The largest |weight| any model file attn reads may hold (checkpoints, GPT-2 and BERT
// folders): trained models stay orders of magnitude below it (GPT-2's and BERT's largest are
// in the tens), and weights of this size already overflow float32 in a few products.
inline constexpr float kMaxWeightMagnitude = 1e6f;
// The one rule every weight reader applies: each value finite and |w| <= kMaxWeightMagnitude.
// Throws InputError "FILE: tensor 'NAME' holds V at flat index I (weights must be finite,
// |w| <= 1e+06)", a NaN or infinity said as "the non-finite value nan".
void check_weight_values(const Tensor& t, std::string_view file, std::string_view name);

// A run's outputs held back until it has made them all. While one is open (one at a time),
// write_file_atomic leaves each regular file it writes in its temp file beside the target, and
// create_folders records the folders it makes; commit() renames every temp file over its target
// in the order written. Destroyed without commit() (the run failed part way), it removes every
// temp file and every folder it made, so a failed run leaves none of its outputs. A device, a
// FIFO or standard output cannot be held back and is written at once; TERM, INT and HUP remove
// what is held, as they remove a single write's temp file.
class OutputBatch {
public:
    OutputBatch();   // std::logic_error when one is open already
    ~OutputBatch();  // removes what was not committed
    OutputBatch(const OutputBatch&) = delete;
    OutputBatch& operator=(const OutputBatch&) = delete;
    // InputError naming the target if a rename fails (what is not yet renamed is removed).
    void commit();
};
// mkdir -p: `dir` and the folders missing above it, each recorded by an open OutputBatch
// (removed again, when empty, if the batch is not committed). InputError naming `dir`.
void create_folders(const std::string& dir);

}  // namespace attn
