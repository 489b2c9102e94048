// libFuzzer target: attn::read_bert_config, the model's config.json reader.
// Input: config.json's bytes, optionally followed by a NUL and the bytes of
// sentence_bert_config.json. It must return a config inside the documented
// ranges (bert.hpp) or throw attn::InputError, nothing else.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "attn/core/errors.hpp"
#include "attn/model/bert.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const size_t config_size = nul != nullptr ? static_cast<size_t>(nul - data) : size;
    attn::fuzz::MemFile config(data, config_size);
    std::optional<attn::fuzz::MemFile> st;
    if (nul != nullptr) st.emplace(nul + 1, size - config_size - 1);
    attn::ModelFiles files;
    files.config = config.path();
    files.st_config = st ? st->path() : "";
    try {
        const attn::BertConfig c = attn::read_bert_config(files);
        if (c.vocab_size < 1 || c.vocab_size > 10'000'000) fail("vocab_size out of range");
        if (c.hidden < 1 || c.hidden > 65536) fail("hidden out of range");
        if (c.layers < 1 || c.layers > 1000) fail("layers out of range");
        if (c.heads < 1 || c.heads > 1024 || c.hidden % c.heads != 0) fail("heads out of range or not dividing hidden");
        if (c.intermediate < 1 || c.intermediate > (1 << 20)) fail("intermediate out of range");
        if (c.max_position < 2 || c.max_position > (1 << 20)) fail("max_position out of range");
        if (c.type_vocab < 1 || c.type_vocab > 1024) fail("type_vocab out of range");
        if (!std::isfinite(c.layer_norm_eps) || !(c.layer_norm_eps > 0.0f && c.layer_norm_eps < 1.0f))
            fail("layer_norm_eps not in (0, 1)");
        if (c.max_len < 2 || c.max_len > c.max_position) fail("max_len not in [2, max_position]");
    } catch (const attn::InputError&) {
    }
    return 0;
}
