// decoders.cpp: where the decoders attn ships live (attn/model/gpt2.hpp).
#include <cstdlib>

#include "attn/io/data_files.hpp"
#include "attn/model/gpt2.hpp"

namespace attn {

std::string default_decoder_dir(std::string_view name) {
    if (const char* env = std::getenv("ATTN_DECODER_DIR"); env != nullptr && env[0] != '\0') return env;
    // data/decoders/NAME in the working folder, an installed share/attn/data, or above the executable
    const std::string rel = "decoders/" + std::string(name);
    return find_data(rel).value_or("data/" + rel);
}

}  // namespace attn
