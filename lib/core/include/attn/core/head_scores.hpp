// attn/core/head_scores.hpp: how much a head behaves as a previous-token or an induction head,
// read from its attention weights on a sequence of random tokens repeated once (Olsson et al.,
// 2022). Used on GPT-2-family models (attn/model/induction.hpp) and on the tiny decoder that
// `attn train --task induction` trains (attn/train/induction.hpp).
//
//   previous-token score of a head   mean over queries i >= 1 of w[i][i-1]
//   prefix-matching score            mean over queries i in the second copy of w[i][i-n+1]:
//                                    the query r_k attends to the token after r_k's earlier
//                                    occurrence (position k+1 of the first copy), the token to copy
// w is the head's (T, T) attention; chance is about 1/(number of keys a query sees).
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// weights (1, H, T, T) -> per head. ShapeError on another shape.
std::vector<double> previous_token_scores(const Tensor& weights);
// weights (1, H, T, T) of a sequence whose first copy starts at `start` and repeats with
// period n from start + n on -> per head, the mean over queries i in [start + n, T) of
// w[i][i - n + 1]. ShapeError unless T >= start + n + 1.
std::vector<double> prefix_matching_scores(const Tensor& weights, int64_t start, int64_t n);

}  // namespace attn
