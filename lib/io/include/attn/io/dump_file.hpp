// attn/io/dump_file.hpp: a Dump (attn/io/dump.hpp) in any of its three file formats,
// chosen by the file name's extension:
//
//   NAME.json         the attn-dump JSON text (dump_to_string); "-" is JSON on stdout
//   NAME.safetensors  every tensor as F32 under its dump name, in the safetensors
//                     layout (attn/io/safetensors.hpp); the __metadata__ holds
//                     "format": "attn-dump", "version": "1", "seed": decimal text,
//                     "config": the config as JSON text, "order": the tensor names
//                     in dump order as a JSON array, and "mask": the config's mask
//                     spelling. Loads with `safetensors.numpy.load_file`.
//   NAME.npz          a numpy archive (an uncompressed zip, as np.savez writes):
//                     NAME.npy per tensor ('<f4'; the boolean "mask" as '|b1'),
//                     in dump order, then "__attn__.npy", a 0-d byte string ('|S')
//                     holding {"format", "version", "seed", "config", "order"} as
//                     JSON. Loads with `numpy.load` (no pickle needed):
//                     json.loads(npz["__attn__"].item()).
//
// Every float goes through bit for bit: write then read gives the same tensors,
// order, config and seed. An unknown extension is refused (InputError naming the
// three). The readers trust nothing: sizes are checked before anything is
// allocated, compressed or ZIP64 archives and CRC mismatches are refused, and
// every defect is an InputError naming the file.
#pragma once

#include <string>
#include <string_view>

#include "attn/io/dump.hpp"

namespace attn {

enum class DumpFormat { json, safetensors, npz };
const char* dump_format_name(DumpFormat f);  // "json", "safetensors", "npz"

// The format `path` names by its extension (.json, .safetensors, .npz; "-", a
// character device such as /dev/null, or a FIFO is json). Throws InputError "'x.bin': a dump file ends in .safetensors,
// .npz or .json" for any other.
DumpFormat dump_format_of(const std::string& path);

std::string dump_to_safetensors(const Dump& d);
std::string dump_to_npz(const Dump& d);
Dump dump_from_safetensors(std::string bytes, std::string_view what = "safetensors");
Dump dump_from_npz(std::string_view bytes, std::string_view what = "npz");

// The dump as dump_format_of(path) says, written whole or not at all
// (write_file_atomic); `nonfinite` applies to JSON only.
void write_dump_file(const std::string& path, const Dump& d, JsonNonFinite nonfinite = JsonNonFinite::string);
// Reads a dump in the format its extension names; any other name (no extension,
// .txt) is read as attn-dump JSON, as attn always has.
Dump read_dump_any(const std::string& path);

// The entries of an uncompressed zip archive (the npz container), in archive
// order. Refuses compression, encryption, ZIP64, a CRC mismatch, entries that
// overlap or leave the file. Exposed for the fuzzer and the tests.
struct ZipEntry {
    std::string name;
    std::string_view data;  // a view into the archive's bytes
};
std::vector<ZipEntry> zip_entries(std::string_view bytes, std::string_view what);
// A stored (uncompressed) zip archive of `entries` (name, bytes), as Python's zipfile writes one.
std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace attn
