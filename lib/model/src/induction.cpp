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

static void check_weights(const Tensor& w) {
    if (w.rank() != 4 || w.dim(0) != 1 || w.dim(2) != w.dim(3))
        throw ShapeError(fmt::format("head scores take self-attention weights (1, H, T, T), got {}", shape_str(w.shape)));
}

std::vector<double> previous_token_scores(const Tensor& w) {
    // w (1, H, T, T): mean over i >= 1 of w[h][i][i-1]
    check_weights(w);
    const int64_t H = w.dim(1), T = w.dim(2);
    std::vector<double> out(static_cast<size_t>(H), 0.0);
    if (T < 2) return out;
    for (int64_t h = 0; h < H; ++h) {
        const float* wh = w.ptr() + h * T * T;
        double s = 0;
        for (int64_t i = 1; i < T; ++i) s += wh[i * T + i - 1];
        out[static_cast<size_t>(h)] = s / static_cast<double>(T - 1);
    }
    return out;
}

std::vector<double> prefix_matching_scores(const Tensor& w, int64_t start, int64_t n) {
    // w (1, H, T, T): mean over i in [start + n, T) of w[h][i][i - n + 1]
    check_weights(w);
    const int64_t H = w.dim(1), T = w.dim(2);
    if (start < 0 || n < 1 || T < start + n + 1)
        throw ShapeError(fmt::format("prefix matching needs a second copy: T = {} tokens, copy of {} from position {}", T,
                                     n, start));
    std::vector<double> out(static_cast<size_t>(H), 0.0);
    for (int64_t h = 0; h < H; ++h) {
        const float* wh = w.ptr() + h * T * T;
        double s = 0;
        for (int64_t i = start + n; i < T; ++i) s += wh[i * T + i - n + 1];
        out[static_cast<size_t>(h)] = s / static_cast<double>(T - start - n);
    }
    return out;
}

double next_token_loss(const Tensor& logits, const std::vector<int32_t>& ids, int64_t from, int64_t to) {
    // logits (T, V); the loss of row t is -log softmax(row t)[ids[t + 1]]
    const int64_t T = logits.dim(0), V = logits.dim(1);
    if (from < 0 || to > T - 1 || from >= to || static_cast<int64_t>(ids.size()) != T)
        throw ShapeError(fmt::format("next-token loss over rows [{}, {}) of {} logits with {} ids", from, to, T, ids.size()));
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
