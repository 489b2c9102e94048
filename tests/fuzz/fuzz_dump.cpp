// libFuzzer target: attn::dump_from_string (the attn-dump JSON reader) on
// arbitrary text. It must return a Dump or throw attn::InputError, nothing else; JSON nested
// deeper than kMaxJsonDepth is always refused.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const attn::Dump d = attn::dump_from_string(text, "fuzz");
        if (attn::json_depth(text, attn::kMaxJsonDepth) > attn::kMaxJsonDepth) attn::fuzz::fail("deep JSON was read");
        for (const auto& [name, t] : d.tensors) (void)attn::shape_numel(t.shape);
    } catch (const attn::InputError&) {
    }
    return 0;
}
