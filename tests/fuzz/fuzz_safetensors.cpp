// libFuzzer target: SafeTensors::parse on arbitrary bytes. Any input must
// either parse (and then every tensor must read back within its range) or
// throw attn::InputError; a crash, a sanitizer report or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const attn::SafeTensors st =
            attn::SafeTensors::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
        for (const std::string& name : st.names()) {
            const attn::SafeTensorInfo& info = st.info(name);
            (void)st.bytes(name);
            if (info.dtype == attn::DType::F32 || info.dtype == attn::DType::F16 || info.dtype == attn::DType::BF16 ||
                info.dtype == attn::DType::F64)
                (void)st.to_float(name);
        }
    } catch (const attn::InputError&) {
    }
    return 0;
}
