// gpt2_test_util.hpp: reading the token ids the fixture scripts store as int64 tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attn/io/safetensors.hpp"

namespace attn::test {

// The int64 tensor `name` of `ref` as int32 token ids.
inline std::vector<int32_t> int64_ids(const attn::SafeTensors& ref, const std::string& name) {
    const auto bytes = ref.bytes(name);
    std::vector<int32_t> ids(bytes.size() / 8);
    for (size_t i = 0; i < ids.size(); ++i) {
        int64_t v = 0;
        std::memcpy(&v, bytes.data() + 8 * i, 8);
        ids[i] = static_cast<int32_t>(v);
    }
    return ids;
}

}  // namespace attn::test
