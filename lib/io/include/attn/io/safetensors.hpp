// attn/io/safetensors.hpp: a strict reader and a strict writer for .safetensors files.
//
// Layout of the format (https://github.com/huggingface/safetensors):
//   bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
//   bytes [8, 8+N)      a JSON object: NAME -> {"dtype": "F32", "shape": [..],
//                       "data_offsets": [BEGIN, END]}, plus an optional
//                       "__metadata__": {string: string}
//   bytes [8+N, EOF)    the data section; offsets are relative to its start
//
// The reader trusts nothing: the header size is capped, every entry must have
// a known dtype, a shape whose byte size equals END - BEGIN (overflow
// checked), a range inside the data section, and no two ranges may overlap or
// leave a hole (the data section is entirely indexed, as the format requires).
// Any defect is an InputError that names the file; no input can crash it
// (it is fuzzed: tests/fuzz/fuzz_safetensors.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

const char* dtype_name(DType d);
int dtype_size(DType d);  // bytes per element

struct SafeTensorInfo {
    DType dtype = DType::F32;
    Shape shape;
    uint64_t begin = 0, end = 0;  // byte range in the data section
};

// The largest header the reader accepts (the reference implementation's cap).
inline constexpr uint64_t kSafetensorsMaxHeader = 100u * 1024u * 1024u;

class SafeTensors {
public:
    // Reads and validates a whole file. Throws InputError naming the path.
    static SafeTensors load(const std::string& path);
    // Validates bytes already in memory; `what` names them in errors.
    static SafeTensors parse(std::string bytes, std::string_view what = "safetensors");

    const std::string& what() const { return what_; }
    bool has(const std::string& name) const { return infos_.count(name) != 0; }
    const SafeTensorInfo& info(const std::string& name) const;  // InputError if absent
    std::vector<std::string> names() const;                     // sorted
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // The tensor as float32 (F32 copied; F64, F16, BF16 converted). Integer
    // dtypes are refused. InputError names the file and the tensor.
    Tensor to_float(const std::string& name) const;
    // Same, and the shape must equal `expect` (ShapeError otherwise).
    Tensor to_float(const std::string& name, const Shape& expect) const;
    // Raw bytes of a tensor.
    std::string_view bytes(const std::string& name) const;

private:
    std::string what_;
    std::string buf_;        // the whole file
    uint64_t data_start_ = 0;
    std::map<std::string, SafeTensorInfo> infos_;
    std::map<std::string, std::string> metadata_;
};

// The strict writer: float32 tensors (F32) and string metadata in the safetensors
// format. Names are written sorted (the order of the data section too), the header is
// padded with spaces to a multiple of 8 bytes so every tensor starts 8-byte aligned, and
// the data section is indexed with no gap. Throws InputError on an empty or duplicate
// name, the reserved name "__metadata__", or a tensor whose shape does not match its data.
std::string safetensors_to_string(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
// The same bytes written to `path` whole or not at all (write_file_atomic).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace attn
