// libFuzzer target: attn::load_checkpoint, the reader of `attn train --save` files
// (safetensors + the model config in the metadata). Any input must load into a model
// its config describes, every weight finite and at most kMaxCheckpointWeight in size,
// max_seq at most kMaxTaskSeq, or throw attn::InputError; nothing else.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attn/core/errors.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/train/tasks.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    const attn::fuzz::MemFile file(data, size);
    try {
        attn::Checkpoint ck = attn::load_checkpoint(file.path());
        const attn::ModelConfig& c = ck.model.config();
        if (c.max_seq < 1 || c.max_seq > attn::kMaxTaskSeq) fail("max_seq out of range");
        if (c.vocab < 1 || c.d_model < 1 || c.heads < 1 || c.layers < 1) fail("a size below 1");
        for (const auto& p : ck.model.params())
            for (const float w : p.value->data)
                if (!(std::fabs(w) <= attn::kMaxCheckpointWeight)) fail("a weight non-finite or out of range");
    } catch (const attn::InputError&) {
    }
    return 0;
}
