// libFuzzer target: attn::read_gpt2_config, the GPT-2 folder's config.json reader.
// Input: config.json's bytes. It must return a config inside the documented ranges
// (gpt2.hpp: every size positive and bounded, n_embd a multiple of n_head, 0 < eps < 1,
// a known activation) or throw attn::InputError, nothing else; JSON nested deeper than
// kMaxJsonDepth is always refused.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/gpt2.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    attn::fuzz::MemFile config(data, size);
    attn::Gpt2Files files;
    files.config = config.path();
    try {
        const attn::Gpt2Config c = attn::read_gpt2_config(files);
        const std::string_view text(reinterpret_cast<const char*>(data), size);
        if (attn::json_depth(text, attn::kMaxJsonDepth) > attn::kMaxJsonDepth) fail("deep JSON was read");
        if (c.vocab_size < 1 || c.vocab_size > 10'000'000) fail("vocab_size out of range");
        if (c.n_positions < 1 || c.n_positions > (1 << 20)) fail("n_positions out of range");
        if (c.n_embd < 1 || c.n_embd > 65536) fail("n_embd out of range");
        if (c.n_layer < 1 || c.n_layer > 1000) fail("n_layer out of range");
        if (c.n_head < 1 || c.n_head > 1024 || c.n_embd % c.n_head != 0)
            fail("n_head out of range or not dividing n_embd");
        if (c.n_inner < 1 || c.n_inner > 4 * 65536) fail("n_inner out of range");
        if (!std::isfinite(c.layer_norm_epsilon) || !(c.layer_norm_epsilon > 0.0f && c.layer_norm_epsilon < 1.0f))
            fail("layer_norm_epsilon not in (0, 1)");
        if (c.activation != "gelu_new" && c.activation != "gelu_pytorch_tanh" && c.activation != "gelu_fast" &&
            c.activation != "gelu")
            fail("an activation attn does not implement");
    } catch (const attn::InputError&) {
    }
    return 0;
}
