// libFuzzer target: npy_from_string on arbitrary bytes. Any input must either
// parse (and then the array must hold exactly product(shape) values, 0 or 1 for
// a boolean one) or throw attn::InputError; a crash, a sanitizer report, an
// allocation the file's length did not pay for, or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const attn::NpyArray a =
            attn::npy_from_string(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        if (attn::shape_numel(a.values.shape) != a.values.numel()) std::abort();
        if (static_cast<size_t>(a.values.numel()) > size) std::abort();  // never more values than bytes
        if (a.is_bool())
            for (float v : a.values.data)
                if (v != 0.0f && v != 1.0f) std::abort();
    } catch (const attn::InputError&) {
    }
    return 0;
}
