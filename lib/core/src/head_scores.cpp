// head_scores.cpp: previous-token and prefix-matching scores (see attn/core/head_scores.hpp).
#include "attn/core/head_scores.hpp"

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

static void check_weights(const Tensor& w) {
    if (w.rank() != 4 || w.dim(0) != 1 || w.dim(2) != w.dim(3))
        throw ShapeError(
            fmt::format("head scores take self-attention weights (1, H, T, T), got {}", shape_str(w.shape)));
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
        throw ShapeError(fmt::format("prefix matching needs a second copy: T = {} tokens, copy of {} from position {}",
                                     T, n, start));
    std::vector<double> out(static_cast<size_t>(H), 0.0);
    for (int64_t h = 0; h < H; ++h) {
        const float* wh = w.ptr() + h * T * T;
        double s = 0;
        for (int64_t i = start + n; i < T; ++i) s += wh[i * T + i - n + 1];
        out[static_cast<size_t>(h)] = s / static_cast<double>(T - start - n);
    }
    return out;
}

}  // namespace attn
