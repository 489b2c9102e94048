// induction.cpp: the repeated-random-tokens probe (see attn/model/induction.hpp).
#include "attn/model/induction.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"

namespace attn {

std::vector<int32_t> repeated_random_tokens(int64_t n, int32_t lo, int32_t hi, uint64_t seed, int32_t bos) {
    if (n < 1) throw InputError(fmt::format("the repeated sequence needs at least 1 token, got {}", n));
    if (hi <= lo) throw InputError(fmt::format("no token ids to draw from in [{}, {})", lo, hi));
    std::vector<int32_t> ids;
    if (bos >= 0) ids.push_back(bos);
    Rng rng(seed);
    std::vector<int32_t> half;
    for (int64_t i = 0; i < n; ++i)
        half.push_back(lo + static_cast<int32_t>(rng.uniform_double() * static_cast<double>(hi - lo)));
    ids.insert(ids.end(), half.begin(), half.end());
    ids.insert(ids.end(), half.begin(), half.end());
    return ids;
}

double next_token_loss(const Tensor& logits, const std::vector<int32_t>& ids, int64_t from, int64_t to) {
    // logits (T, V); the loss of row t is -log softmax(row t)[ids[t + 1]]
    const int64_t T = logits.dim(0), V = logits.dim(1);
    if (from < 0 || to > T - 1 || from >= to || static_cast<int64_t>(ids.size()) != T)
        throw ShapeError(
            fmt::format("next-token loss over rows [{}, {}) of {} logits with {} ids", from, to, T, ids.size()));
    double total = 0;
    for (int64_t t = from; t < to; ++t) {
        const float* row = logits.ptr() + t * V;
        double mx = row[0];
        for (int64_t v = 1; v < V; ++v) mx = std::max(mx, static_cast<double>(row[v]));
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
        total += mx + std::log(sum) - row[ids[static_cast<size_t>(t + 1)]];
    }
    return total / static_cast<double>(to - from);
}

}  // namespace attn
