// attn/io/npy.hpp: a strict reader and a writer for NumPy's .npy files.
//
// Layout (numpy.lib.format, versions 1.0 and 2.0):
//   bytes [0, 6)      the magic "\x93NUMPY"
//   bytes 6, 7        major, minor version: 1.0 or 2.0 (3.0, a UTF-8 header, is refused)
//   then              the header length HLEN, unsigned little-endian: 2 bytes (1.0), 4 bytes (2.0)
//   then HLEN bytes   a Python dict literal ending in '\n':
//                     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   then              the data, row-major, exactly product(shape) * itemsize bytes
//
// What is read: descr '<f4' (float32, copied), '<f8' (float64, converted to the
// nearest float), '|b1' (bool) and '|u1' / '<u1' (uint8) holding 0 or 1, both
// read as a boolean array with values 0 and 1. C order only: fortran_order True
// is refused, as is a big-endian or any other dtype, a structured dtype, a
// trailing byte, or a data section shorter than the shape needs. The sizes are
// checked against the bytes present before anything is allocated, and every
// defect is an InputError naming the file and the rule (the reader is fuzzed:
// tests/fuzz/fuzz_npy.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

struct NpyArray {
    enum class Kind { F32, F64, Bool };
    Kind kind = Kind::F32;  // what the file held (F64 has been converted to float)
    std::string descr;      // the file's descr, e.g. "<f4"
    Tensor values;          // the array as float32; a boolean one holds 0 and 1

    bool is_bool() const { return kind == Kind::Bool; }
};

// The largest header the reader accepts (numpy itself refuses headers over 10,000
// bytes unless told otherwise; a rank-64 shape of 20-digit sizes fits in 2 KB).
inline constexpr uint64_t kNpyMaxHeader = 65536;
// The most dimensions an array may have (numpy's own limit).
inline constexpr size_t kNpyMaxRank = 64;

// Parses the bytes of a .npy file; errors name `what` (the file).
NpyArray npy_from_string(std::string_view bytes, std::string_view what = "npy");
// Reads and parses a file. Throws InputError naming the path.
NpyArray read_npy_file(const std::string& path);

// A float32 tensor as a version 1.0 .npy file ('<f4', C order, header padded so
// the data starts at a multiple of 64 bytes, as numpy writes it).
std::string npy_to_string(const Tensor& t);
// A boolean array ('|b1'); `values` are 0 or 1 (InputError otherwise) and fill `shape`.
std::string npy_bool_to_string(const Shape& shape, const std::vector<uint8_t>& values);
// npy_to_string written to `path` whole or not at all (write_file_atomic).
void save_npy(const std::string& path, const Tensor& t);

}  // namespace attn
