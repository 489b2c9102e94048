// libFuzzer target: attn::read_bert_config, the model's config.json reader.
// Input: config.json's bytes, optionally followed by NUL-separated parts: the bytes of
// sentence_bert_config.json, tokenizer_config.json, the pooling config (1_Pooling/config.json)
// and modules.json, in that order (an input with fewer parts has fewer files). It must
// return a config inside the documented ranges (bert.hpp) or throw attn::InputError,
// nothing else; JSON nested deeper than kMaxJsonDepth, in any part, is always refused.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bert.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    // the parts, split at the first four NUL bytes
    std::vector<std::unique_ptr<attn::fuzz::MemFile>> parts;
    std::vector<std::string_view> texts;  // the same bytes
    size_t start = 0;
    for (int k = 0; k < 5; ++k) {
        const auto* nul = k < 4 ? static_cast<const uint8_t*>(std::memchr(data + start, 0, size - start)) : nullptr;
        const size_t end = nul != nullptr ? static_cast<size_t>(nul - data) : size;
        parts.push_back(std::make_unique<attn::fuzz::MemFile>(data + start, end - start));
        texts.emplace_back(reinterpret_cast<const char*>(data + start), end - start);
        if (nul == nullptr) break;
        start = end + 1;
    }
    attn::ModelFiles files;
    std::string* slots[] = {&files.config, &files.st_config, &files.tokenizer_config, &files.pooling, &files.modules};
    for (size_t k = 0; k < parts.size(); ++k) *slots[k] = parts[k]->path();
    try {
        const attn::BertConfig c = attn::read_bert_config(files);
        for (const std::string_view part : texts)
            if (attn::json_depth(part, attn::kMaxJsonDepth) > attn::kMaxJsonDepth) fail("deep JSON was read");
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
        if (c.pooling != attn::BertPooling::Mean && c.pooling != attn::BertPooling::Cls) fail("an unknown pooling");
        if (files.tokenizer_config.empty() && !(c.casing.lower_case && c.casing.strip_accents))
            fail("a cased tokenizer without tokenizer_config.json");
        if (files.modules.empty() && !c.normalize) fail("no normalisation without modules.json");
    } catch (const attn::InputError&) {
    }
    return 0;
}
