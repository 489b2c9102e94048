// lessons/common.hpp: what every lesson file includes.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "attn/viz/heatmap.hpp"
#include "lesson.hpp"
#include "ops.hpp"

namespace attn::lessons {

// q/k/v as [1, 1, n, d] from rows of numbers (the lesson's own inputs).
inline Tensor rows4(const std::vector<std::vector<float>>& rows) {
    const int64_t n = static_cast<int64_t>(rows.size()), d = n ? static_cast<int64_t>(rows[0].size()) : 0;
    std::vector<float> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    return Tensor::from({1, 1, n, d}, std::move(flat));
}

// Softmax of one vector through the library's softmax_rows.
inline std::vector<float> softmax_vec(std::vector<float> z) {
    softmax_rows(z.data(), 1, static_cast<int64_t>(z.size()));
    return z;
}

inline AttentionOptions opts_scale(Scale s) {
    AttentionOptions o;
    o.scale = s;
    return o;
}

}  // namespace attn::lessons
