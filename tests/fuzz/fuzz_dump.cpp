// libFuzzer target: attn::dump_from_string (the attn-dump JSON reader) on
// arbitrary text. It must return a Dump or throw attn::InputError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const attn::Dump d = attn::dump_from_string(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        for (const auto& [name, t] : d.tensors) (void)attn::shape_numel(t.shape);
    } catch (const attn::InputError&) {
    }
    return 0;
}
